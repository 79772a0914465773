import Foundation
import MBaaSCore
import MBaaSLocal
import Testing
@testable import MBaaSSync

@Suite("Replica policies and configuration")
struct ReplicaPolicyTests {
    @Test("a configuration file describes several classes and round-trips")
    func roundTrip() throws {
        let text = """
            {"classes": {
               "Memo": {"persistence": "localAndServer", "autoRefresh": 60, "refreshScope": "user",
                        "where": {"archived": {"$ne": true}}, "lifeSpan": 604800, "encryptedFields": ["body"],
                        "lockForUpdate": true, "merge": "leaveIfChanged", "fields": {"due": "Date", "n": "int"}},
               "Draft": {"persistence": "localOnly"}},
             "default": {"persistence": "serverOnly"}}
            """
        let config = try ReplicaConfiguration(json: try JSON.parse(text))
        let memo = config.policy(for: "Memo")
        #expect(memo.persistence == .localAndServer)
        #expect(memo.autoRefresh == 60)
        #expect(memo.refreshScope == .user)
        #expect(memo.where?.keys == ["archived"])
        #expect(memo.lifeSpan == 604800)
        #expect(memo.encryptedFields == ["body"])
        #expect(memo.lockForUpdate)
        #expect(memo.merge == .leaveIfChanged)
        #expect(memo.fields == ["due": "Date", "n": "int"])
        #expect(config.policy(for: "Draft").persistence == .localOnly)
        #expect(config.policy(for: "Other").persistence == .serverOnly)
        #expect(config.syncedClasses == ["Memo"])
        #expect(try ReplicaConfiguration(json: config.json) == config)
    }

    @Test("bad configurations are refused naming the problem", arguments: [
        (#"{"classes":{"Memo":{"persistence":"localOnly","where":{"a":1}}}}"#, "a localOnly class has no 'where'"),
        (#"{"classes":{"Memo":{"merge":"theirs"}}}"#, "unknown merge mode 'theirs'"),
        (#"{"classes":{"Memo":{"persistence":"everywhere"}}}"#, "unknown persistence 'everywhere'"),
        (#"{"classes":{"Memo":{"lifespan":5}}}"#, "unknown member 'lifespan'"),
        (#"{"classes":{"Memo":{"lifeSpan":-5}}}"#, "'lifeSpan' must be a positive number"),
        (#"{"classes":{"Memo":{"encryptedFields":["body"],"where":{"body":"x"}}}}"#, "tests the encrypted field 'body'"),
        (#"{"classes":{"Memo":{"persistence":"serverOnly","autoRefresh":5}}}"#, "'autoRefresh' needs persistence localAndServer"),
        (#"{"clases":{}}"#, "unknown member 'clases'"),
        (#"{"classes":{"Memo":{"fields":{"due":"datetime"}}}}"#, "field 'due' has the unknown type 'datetime'"),
        (#"{"classes":{"Memo":{"fields":{"due":5}}}}"#, "'fields' must be an object of field name → type name"),
    ])
    func refused(text: String, message: String) throws {
        let error = #expect(throws: MBaaSError.self) {
            _ = try ReplicaConfiguration(json: try JSON.parse(text))
        }
        #expect(error?.kind == .invalidRequest)
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }

    @Test("a refused configuration writes nothing: no replica file appears")
    func refusedWritesNothing() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("memo.replica").path
        let bad = ReplicaConfiguration(classes: ["Memo": ReplicaPolicy(persistence: .localOnly, where: Field("a") == 1)])
        await #expect(throws: MBaaSError.self) {
            _ = try await openReplica(path, remote: try localRemote(dir), configuration: bad)
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("a foreign SQLite file and a plain Local store are refused and left untouched")
    func foreignFilesRefused() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let localPath = dir.appendingPathComponent("plain.db").path
        let plain = try LocalBackend(path: localPath)
        _ = try await plain.create(Record(className: "Memo", fields: ["title": "kept"]))
        await plain.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: localPath))
        let error = await #expect(throws: MBaaSError.self) {
            _ = try await openReplica(localPath, remote: try localRemote(dir))
        }
        #expect(error?.kind == .invalidRequest)
        #expect(error?.message.contains("is not a replica") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: localPath)) == before)
    }

    @Test("the replica file is created with mode 0600")
    func privateFile() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("memo.replica").path
        let replica = try await openReplica(path, remote: try localRemote(dir))
        await replica.close()
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }
}
