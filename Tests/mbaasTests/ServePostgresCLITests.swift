import Foundation
import MBaaSCore
import MBaaSNCMB
import MBaaSPostgres
import Logging
import ArgumentParser
@testable import mbaas
import MBaaSTesting
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The PostgreSQL server the live tests use (`.ci/postgres.sh run -- …` exports it); without it this suite is skipped
/// with that reason (and under CI `PostgresCITests` fails instead).
private let postgresURL = ProcessInfo.processInfo.environment["MBAAS_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }

/// Issue 37's multi-instance proof: two `mbaas serve --dialect ncmb --data postgres://…` processes are one backend.
@Suite("mbaas serve on PostgreSQL: several processes, one database", .ownThreads,
       .enabled(if: postgresURL != nil, "MBAAS_POSTGRES_URL is not set: run under `.ci/postgres.sh run --` to include the live PostgreSQL tests"))
struct ServePostgresCLITests {
    /// Starts `mbaas serve --dialect ncmb` on `data`; returns the process and its backend URL.
    func start(_ cli: CLIHarness, data: String) throws -> (Process, String) {
        let (server, started) = try cli.startServer(["--dialect", "ncmb", "--application-key", "pg-app-key", "--client-key", "pg-client-key",
                                                     "--data", data, "--password-cost", "light"])
        #expect(started["data"]?.stringValue == BackendURL.redact(data), "the password is never printed: \(started.printed())")
        return (server, try #require(started["backendURL"]?.stringValue, "\(started.printed())"))
    }

    func client(_ url: String) async throws -> any Backend {
        try await NCMBBackendFactory().open(try BackendURL(parsing: url), context: BackendContext())
    }

    @Test("the NCMB adapter writes through one and reads through the other; 200 increments; kill -9 loses no acknowledged create")
    func twoServeProcessesOnOneDatabase() async throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let base = try #require(postgresURL)
        let schema = "serve_" + String(UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(8))
        let data = base + (base.contains("?") ? "&" : "?") + "schema=\(schema)"
        let (first, urlA) = try start(cli, data: data)
        defer { if first.isRunning { kill(first.processIdentifier, SIGKILL) } }
        let (second, urlB) = try start(cli, data: data)
        defer { if second.isRunning { second.terminate() } }
        let a = try await client(urlA), b = try await client(urlB)

        // A record written through one is read through the other at once.
        let memo = try await a.create(Record(className: "Memo", acl: .publicReadWrite, fields: ["title": "through A"]))
        let memoID = try #require(memo.id)
        #expect(try await b.get(className: "Memo", id: memoID).fields["title"] == .string("through A"))

        // A session issued by one is accepted by the other.
        let session = try await a.signUp(username: "pg-alice", password: "pw-alice")
        await b.restore(session)
        let mine = try await b.create(Record(className: "Memo", acl: .privateTo(session.userId), fields: ["title": "mine"]))
        #expect(try await a.get(className: "Memo", id: try #require(mine.id)).fields["title"] == .string("mine"))
        try await a.logOut(confirmWithServer: true)
        let refused = await thrownError { _ = try await b.get(className: "Memo", id: mine.id!) }
        #expect(refused?.kind == .unauthorized, "a log-out through A is refused by B: \(String(describing: refused))")
        await b.restore(nil)

        // 200 concurrent increments split over both end exact.
        let counter = try await a.create(Record(className: "Counter", acl: .publicReadWrite, fields: ["n": 0]))
        let counterID = try #require(counter.id)
        let clients = [a, b]
        let failed = await withTaskGroup(of: Int.self) { group in
            for i in 0..<200 {
                group.addTask {
                    do { _ = try await clients[i % 2].update(className: "Counter", id: counterID, RecordUpdate(changes: ["n": .increment(1)])); return 0 }
                    catch { return 1 }
                }
            }
            return await group.reduce(0, +)
        }
        #expect(failed == 0)
        #expect(try await b.get(className: "Counter", id: counterID).fields["n"] == .int(200))

        // kill -9 of A during a stream of creates (four writers): every acknowledged id is present through B.
        let acknowledged = Locked<[String]>([])
        let pid = first.processIdentifier
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    for n in 0..<500 {
                        do {
                            let r = try await a.create(Record(className: "Stream", acl: .publicReadWrite, fields: ["writer": .int(Int64(writer)), "n": .int(Int64(n))]))
                            let count = acknowledged.withLock { $0.append(r.id!); return $0.count }
                            if count == 40 { kill(pid, SIGKILL) }
                        } catch {
                            return
                        }
                    }
                }
            }
        }
        first.waitUntilExit()
        #expect(first.terminationReason == .uncaughtSignal && first.terminationStatus == SIGKILL)
        let ids = acknowledged.value
        #expect(ids.count >= 40)
        var missing: [String] = []
        for id in ids {
            do { _ = try await b.get(className: "Stream", id: id) } catch { missing.append(id) }
        }
        #expect(missing.isEmpty, "acknowledged but missing after kill -9: \(missing)")
        // B kept serving throughout.
        #expect(try await b.count(Query("Stream")) >= ids.count)
        second.terminate()
        second.waitUntilExit()
        #expect(second.terminationStatus == 143)
    }

    @Test("--password-cost reaches a postgres:// store (it was ignored: strong hashes made each live conformance run through a dialect take six minutes in a debug build)")
    func passwordCostReachesPostgres() async throws {
        let base = try #require(postgresURL)
        for (cost, logN) in [("light", ScryptPasswordHash.Parameters.light.logN), ("strong", ScryptPasswordHash.Parameters.default.logN)] {
            let schema = "cost_" + String(UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(8))
            let data = base + (base.contains("?") ? "&" : "?") + "schema=\(schema)"
            let command = try ServeCommand.parse(["--dialect", "ncmb", "--application-key", "k", "--client-key", "c", "--data", data,
                                                  "--password-cost", cost])
            let store = try await command.openStore(logger: Logger(label: "test"))
            let postgres = try #require(store as? PostgresBackend, "\(type(of: store))")
            #expect(postgres.options.passwordHashing.logN == logN, "\(cost): \(postgres.options.passwordHashing)")
            await store.close()
        }
    }

    @Test("the conformance suite passes live against the NCMB and Parse dialects on PostgreSQL (no failed or errored scenario)",
          arguments: [("ncmb", ["--application-key", "pg-app-key", "--client-key", "pg-client-key"]),
                      ("parse", ["--app-id", "pg-app", "--rest-key", "pg-rest-key"])])
    func conformanceOnPostgres(dialect: String, flags: [String]) throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let base = try #require(postgresURL)
        let schema = "conf_\(dialect)_" + String(UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(8))
        let data = base + (base.contains("?") ? "&" : "?") + "schema=\(schema)"
        let (server, started) = try cli.startServer(["--dialect", dialect] + flags + ["--data", data, "--password-cost", "light"])
        defer { if server.isRunning { server.terminate(); server.waitUntilExit() } }
        let url = try #require(started["backendURL"]?.stringValue, "\(started.printed())")
        let run = try cli.run(["conformance", "--mode", "live", "--backend", url, "--format", "json"], sessionOption: false)
        #expect(run.status == 0 || run.status == 10, "\(dialect): exit \(run.status): \(run.stderr.suffix(2000))")
        let report = try JSON.parse(run.stdout)
        let summary = try #require(report["summary"]?.objectValue?.values.first, "\(String(decoding: run.stdout.prefix(500), as: UTF8.self))")
        #expect(summary["failed"] == 0 && summary["errored"] == 0, "\(dialect): \(summary.printed())")
        #expect((summary["passed"]?.intValue ?? 0) > 50, "\(dialect): \(summary.printed())")
    }
}
