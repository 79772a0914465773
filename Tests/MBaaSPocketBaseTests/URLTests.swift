import Foundation
import MBaaSCore
import MBaaSTesting
import Testing
@testable import MBaaSPocketBase

@Suite("PocketBase URLs and configuration")
struct URLTests {
    func config(_ text: String) throws -> PocketBaseConfiguration {
        try PocketBaseConfiguration(url: try BackendURL(parsing: text))
    }

    @Test func superuserOverPlainHTTP() throws {
        let c = try config("pocketbase+http://admin%40example.com:p%40ss%3Aw%2Fd@127.0.0.1:8090")
        #expect(c.baseURL == "http://127.0.0.1:8090")
        #expect(c.credentials == .superuser(email: "admin@example.com", password: "p@ss:w/d"))
        #expect(c.managesSchema)
        #expect(c.usersCollection == "users")
        #expect(c.filesCollection == "mbaas_files")
        #expect(!c.dataAsSuperuser)
    }

    @Test func httpsWithPathPrefixAndOptions() throws {
        let c = try config("pocketbase://admin%40example.com:pw@pb.example.com/pb/?files=uploads&users=members&data=superuser")
        #expect(c.baseURL == "https://pb.example.com/pb")
        #expect(c.filesCollection == "uploads")
        #expect(c.usersCollection == "members")
        #expect(c.dataAsSuperuser)
        #expect(c.timeout == nil)
        #expect(try config("pocketbase://pb.example.com?timeout=2.5").timeout == 2.5)
    }

    @Test func timeoutReachesEveryRequest() async throws {
        let page = JSON.object(["items": .array([]), "page": .int(1), "perPage": .int(30), "totalItems": .int(0), "totalPages": .int(0)])
        let transport = StubTransport { _ in .json(200, page) }
        let backend = PocketBaseBackend(configuration: try config("pocketbase+http://127.0.0.1:8090?timeout=90"),
                                        context: BackendContext(transport: transport))
        _ = try await backend.queryPage(Query("memo"))
        let timeouts: [TimeInterval?] = transport.requests.map { $0.timeout }
        #expect(!timeouts.isEmpty && timeouts.allSatisfy { $0 == 90 }, "\(timeouts)")
    }

    @Test func appUserAndAnonymous() throws {
        let user = try config("pocketbase://alice:secret@pb.example.com?auth=users")
        #expect(user.credentials == .user(collection: "users", identity: "alice", password: "secret"))
        #expect(!user.managesSchema)
        let members = try config("pocketbase://bob:pw@pb.example.com?auth=members")
        #expect(members.usersCollection == "members")
        let anonymous = try config("pocketbase://pb.example.com:443")
        #expect(anonymous.credentials == .none)
        #expect(anonymous.baseURL == "https://pb.example.com:443")
    }

    @Test(arguments: [
        "ncmb://a:b@host",
        "pocketbase://admin@host",
        "pocketbase://pb.example.com?auth=users",
        "pocketbase://a:b@host?colour=blue",
        "pocketbase://a:b@host?data=everyone",
        "pocketbase://a:b@host?auth=users&data=superuser",
        "pocketbase://a:b@host?files=bad-name",
        "pocketbase://a:b@host?users=_superusers",
        "pocketbase://a:b@host?timeout=-1",
        "pocketbase://a:b@host?timeout=inf",
    ])
    func invalidURLs(_ text: String) throws {
        #expect(throws: MBaaSError.self) { try config(text) }
        do { _ = try config(text) } catch let e as MBaaSError {
            #expect(e.kind == .invalidRequest)
            #expect(!e.message.contains(":b@"))  // the secret never shows
        }
    }

    @Test func factoryOpensWithoutNetwork() async throws {
        let backend = try await PocketBaseBackendFactory().open(
            try BackendURL(parsing: "pocketbase+http://admin%40example.com:pw@127.0.0.1:1"), context: BackendContext(transport: Refusing()))
        #expect(backend.adapterName == "pocketbase")
        #expect(backend.capabilities.has(.atomicBatch))
        #expect(!backend.capabilities.has(.optimisticLocking))
        #expect(backend.capabilities.missing([.operator(.regex)])?.contains("regular expressions") == true)
        #expect(await backend.session == nil)
    }
}

struct Refusing: HTTPTransport {
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        throw MBaaSError(.transport, "no network in this test (\(request.method) \(request.url.path))")
    }
}

@Suite("PocketBase wire profile")
struct PocketBaseWireProfileTests {
    @Test func plainHTTPNeedsOnlyTheGenericProfile() {
        let p = PocketBaseBackendFactory().wireProfile
        #expect(p == .generic)
        #expect(p.isSecretHeader("Authorization") && p.isTokenField("token") && p.isSecretField("password"))
        #expect(p.requiresHost)
    }
}
