import Foundation
import MBaaSAppPot
import MBaaSCore
import MBaaSEmulator
import MBaaSKii
import MBaaSLocal
import MBaaSNCMB
import MBaaSParse
import MBaaSTesting
import Testing

/// Each dialect factory reads the URL its client opens: the URL a dialect made from a URL prints is the same URL
/// (one grammar both ways), the matching client opens it, and the client's data calls are answered in-process.
@Suite struct DialectFactoryTests {
    static let registry = DialectRegistry([NCMBDialectFactory(), KiiDialectFactory(), AppPotDialectFactory(), ParseDialectFactory()])

    func dialect(_ text: String) async throws -> any EmulatorDialect {
        let store = try LocalBackend.inMemory(options: LocalBackend.Options(passwordHashing: .testing))
        return try await Self.registry.makeDialect(url: try BackendURL(parsing: text), store: store, options: DialectOptions())
    }

    @Test(arguments: [
        ("ncmb+http://APP%2FKEY:CLIENT@127.0.0.1:8080", "ncmb"),
        ("kii+http://KAPP:KKEY@127.0.0.1:8081/v2", "kii"),
        ("apppot+http://AKEY@127.0.0.1:8082/root?company=24&app=jp.example.App&version=1.0.0", "apppot"),
        ("parse+http://papp:prest@127.0.0.1:1337/mount", "parse"),
    ])
    func theURLADialectPrintsIsTheURLItWasMadeFrom(url: String, name: String) async throws {
        let made = try await dialect(url)
        #expect(made.name == name)
        #expect(made.backendURL(host: "127.0.0.1", port: try #require(try BackendURL(parsing: url).port)) == url)
    }

    @Test func theNCMBClientOfTheURLIsAnsweredByTheDialectMadeFromIt() async throws {
        let made = try await dialect("ncmb+http://K:C@127.0.0.1:8080")
        let client = try await NCMBBackendFactory().open(try BackendURL(parsing: made.backendURL(host: "127.0.0.1", port: 8080)),
                                                         context: BackendContext(transport: EmulatorTransport(made)))
        let created = try await client.create(Record(className: "Memo", fields: ["title": "in-process"]))
        #expect(try await client.get(className: "Memo", id: try #require(created.id))["title"] == "in-process")
    }

    @Test func theParseMasterKeyOfTheURLIsTheDialects() async throws {
        let made = try await dialect("parse+http://papp:prest@127.0.0.1:1337/parse?masterKey=pmaster")
        let parse = try #require(made as? ParseDialect)
        #expect(parse.configuration.masterKey == "pmaster" && parse.configuration.mount == "/parse")
        let kii = try #require(try await dialect("kii+http://KAPP:SECRET@127.0.0.1:8081?clientID=CID") as? KiiDialect)
        #expect(kii.configuration.clientID == "CID" && kii.configuration.clientSecret == "SECRET" && kii.configuration.basePath == "/api")
    }

    @Test func unknownSchemesAndHTTPSAreRefused() async throws {
        await #expect(throws: MBaaSError.self) { _ = try await dialect("pocketbase+http://127.0.0.1:8090") }
        do {
            _ = try await dialect("salesforce+http://a:b@127.0.0.1")
            Issue.record("an unknown scheme made a dialect")
        } catch let error as MBaaSError {
            #expect(error.kind == .invalidRequest)
            #expect(error.message == "no dialect serves 'salesforce' URLs; served: apppot+http, kii+http, ncmb+http, parse+http")
        }
        do {
            _ = try await dialect("ncmb://K:C@127.0.0.1")
            Issue.record("an https URL made a dialect")
        } catch let error as MBaaSError {
            #expect(error.message.hasPrefix("the emulator speaks plain HTTP"))
        }
    }
}
