import Foundation
import MBaaSAppPotWire
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal
import MBaaSNCMB
import MBaaSTesting
import Testing

/// Two openings of one SQLite file (as two `mbaas serve --data app.db` processes would have), cheap hashing.
private func twoStores(_ directory: URL) throws -> (LocalBackend, LocalBackend) {
    let path = directory.appendingPathComponent("app.db").path
    let options = LocalBackend.Options(passwordHashing: .testing)
    return (try LocalBackend(path: path, options: options), try LocalBackend(path: path, options: options))
}

/// Several dialect instances over one store are one backend (issue 37.3): each holds nothing a request depends on.
@Suite("Several emulator instances over one store")
struct MultiInstanceTests {
    @Test("two NCMB dialects over one SQLite file: records, sessions, revocations and files cross between them")
    func ncmbRecordsSessionsFiles() async throws {
        let directory = try temporaryDirectory("mbaas-multi-ncmb")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (storeA, storeB) = try twoStores(directory)
        let configuration = NCMBDialect.Configuration(applicationKey: "multi-app-key", clientKey: "multi-client-key")
        let a = NCMBDialect(store: storeA, configuration: configuration)
        let b = NCMBDialect(store: storeB, configuration: configuration)
        let clientA = client(a), clientB = client(b)

        let memo = try await clientA.create(Record(className: "Memo", acl: .publicReadWrite, fields: ["title": "rent"]))
        #expect(try await clientB.get(className: "Memo", id: try #require(memo.id)).fields["title"] == .string("rent"))

        // A session issued by A is accepted by B: B writes a private record as that user, A reads it as that user.
        let session = try await clientA.signUp(username: "alice", password: "pw-alice")
        await clientB.restore(session)
        let mine = try await clientB.create(Record(className: "Memo", acl: .privateTo(session.userId), fields: ["title": "mine"]))
        let mineID = try #require(mine.id)
        #expect(try await clientA.get(className: "Memo", id: mineID).fields["title"] == .string("mine"))
        let anonymous = await b.respond(to: try signedRequest(b, "GET", "/classes/Memo/\(mineID)"))
        #expect(anonymous.status == 404 || anonymous.status == 403, "the ACL holds on B: \(anonymous.status)")

        // A file uploaded to A downloads from B (bytes in the shared file directory, metadata in the database).
        let bytes = Data((0..<70_000).map { UInt8($0 % 251) })
        let file = try await clientA.upload(bytes, name: "note.bin", contentType: "application/octet-stream")
        #expect(try await clientB.download(file) == bytes)

        // Logged out through A: the token is refused by both, at once.
        for dialect in [a, b] {
            let before = await dialect.respond(to: try signedRequest(dialect, "GET", "/classes/Memo/\(mineID)", token: session.token))
            #expect(before.status == 200)
        }
        try await clientA.logOut(confirmWithServer: true)
        for dialect in [a, b] {
            let after = await dialect.respond(to: try signedRequest(dialect, "GET", "/classes/Memo/\(mineID)", token: session.token))
            #expect(after.status == 401 && errorCode(after) == "E401001")
        }
        await storeA.close()
        await storeB.close()
    }

    @Test("200 concurrent increments split over two NCMB dialects on one SQLite file end exact")
    func ncmbConcurrentIncrements() async throws {
        let directory = try temporaryDirectory("mbaas-multi-inc")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (storeA, storeB) = try twoStores(directory)
        let configuration = NCMBDialect.Configuration(applicationKey: "multi-app-key", clientKey: "multi-client-key")
        let clients = [client(NCMBDialect(store: storeA, configuration: configuration)),
                       client(NCMBDialect(store: storeB, configuration: configuration))]
        let counter = try await clients[0].create(Record(className: "Counter", acl: .publicReadWrite, fields: ["n": 0]))
        let id = try #require(counter.id)
        let failures = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<200 {
                group.addTask {
                    do {
                        _ = try await clients[i % 2].update(className: "Counter", id: id, RecordUpdate(changes: ["n": .increment(1)]))
                        return 0
                    } catch { return 1 }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(failures == 0)
        #expect(try await clients[1].get(className: "Counter", id: id).fields["n"] == .int(200))
        #expect(try await clients[0].get(className: "Counter", id: id).fields["n"] == .int(200))
        await storeA.close()
        await storeB.close()
    }

    @Test("a Kii admin token issued by one instance is accepted by another with the same credentials, and only by it")
    func kiiAdminTokenAcrossInstances() async throws {
        let directory = try temporaryDirectory("mbaas-multi-kii")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (storeA, storeB) = try twoStores(directory)
        let configuration = KiiDialect.Configuration(appID: "emuapp", appKey: "emu-app-key", clientID: "admin-id", clientSecret: "admin-secret")
        let a = KiiDialect(store: storeA, configuration: configuration)
        let b = KiiDialect(store: storeB, configuration: configuration)
        var otherSecret = configuration
        otherSecret.clientSecret = "another-secret"
        let c = KiiDialect(store: storeB, configuration: otherSecret)
        let issued = await a.respond(to: kiiRequest(a, "POST", "/oauth2/token", json: .object(["client_id": "admin-id", "client_secret": "admin-secret"])))
        let token = try #require(try JSON.parse(issued.body)["access_token"]?.stringValue)
        let body: JSON = .object(["k": "v"])
        let created = await b.respond(to: kiiRequest(b, "POST", "/apps/emuapp/buckets/Config/objects", json: body, token: token))
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        let refused = await c.respond(to: kiiRequest(c, "POST", "/apps/emuapp/buckets/Config/objects", json: body, token: token))
        #expect(refused.status == 403 && kiiErrorCode(refused) == "WRONG_TOKEN")
        var forged = Array(token)
        forged[forged.count - 1] = forged[forged.count - 1] == "0" ? "1" : "0"
        let tampered = await b.respond(to: kiiRequest(b, "POST", "/apps/emuapp/buckets/Config/objects", json: body, token: String(forged)))
        #expect(tampered.status == 403 && kiiErrorCode(tampered) == "WRONG_TOKEN")
        await storeA.close()
        await storeB.close()
    }

    @Test("AppPot over one store: an anonymous token, a user token and a used transactionId cross between instances")
    func appPotTokensAndTransactions() async throws {
        let directory = try temporaryDirectory("mbaas-multi-apppot")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (storeA, storeB) = try twoStores(directory)
        let configuration = AppPotDialect.Configuration(appKey: "emulator-apppot-key", companyId: "24", appId: "jp.co.example.App")
        let a = AppPotDialect(store: storeA, configuration: configuration)
        let b = AppPotDialect(store: storeB, configuration: configuration)
        let users = try AppPotDialect.ProvisionedUser.list(json: JSON.parse(Data(appPotFixtureUsersJSON.utf8)))
        #expect(try await a.provision(users).count == users.count)
        #expect(try await b.provision(users).isEmpty, "B sees A's users in the shared store")

        // An anonymous token from A logs in on B; the user token from B serves on A.
        let anon = await a.respond(to: try appPotRequest(a, "GET", "anonymousTokens", query: [("appKey", configuration.appKey), ("deviceUDID", "t")]))
        let anonymous = try #require(try JSON.parse(anon.body)["results"]?.stringValue)
        let login = AppPotLoginRequest(username: "alice", password: "alice-pass", appId: configuration.appId, deviceUDID: "t",
                                       appVersion: configuration.appVersion, companyId: configuration.companyId).json
        let loggedIn = await b.respond(to: try appPotRequest(b, "POST", "auth/login", json: login, token: anonymous))
        let token = try AppPotAuthInfo(loginResponse: JSON.parse(loggedIn.body)).userToken
        let forged = await b.respond(to: try appPotRequest(b, "POST", "auth/login", json: login, token: String(anonymous.reversed())))
        #expect(appPotErrCode(forged) != 0 && appPotErrCode(forged) != nil)

        let schema = AppPotSchemaRequest(appId: configuration.appId, appVersion: configuration.appVersion, companyId: configuration.companyId,
                                         isResetDatabase: false, tables: [AppPotClassSchema(name: "Memo", columns: ["title": .varchar(20)])])
        #expect(appPotErrCode(await a.respond(to: try appPotRequest(a, "POST", "schemas", json: schema.json, token: token))) == 0)
        // A transactionId used on A is refused on B (the duplicate-submit guard lives in the store).
        let add = AppPotWriteRequest(objectName: "Memo", transactionId: "tx-1", rows: [["title": "once"]])
        let first = await a.respond(to: try appPotRequest(a, "POST", "data/batch/addData", json: add.json, token: token))
        let id = try #require(try AppPotWriteResult.decodeResponse(JSON.parse(first.body)).first?.objectId)
        #expect(id.hasPrefix("Memo_"))
        let again = await b.respond(to: try appPotRequest(b, "POST", "data/batch/addData", json: add.json, token: token))
        #expect(appPotErrCode(again) == Int(AppPotErrorCode.duplicateTransaction))
        let row = await b.respond(to: try appPotRequest(b, "GET", "data/Memo/\(id)", token: token))
        #expect(try AppPotDataResponse.rows(JSON.parse(row.body), keys: ["Memo"])?.first?["title"] == "once")
        await storeA.close()
        await storeB.close()
    }
}
