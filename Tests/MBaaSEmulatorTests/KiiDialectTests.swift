import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSEmulator
import MBaaSKii
import MBaaSKiiWire
import MBaaSLocal
import Testing

/// A fresh Kii dialect on an in-memory store, with cheap password hashing.
func makeKiiDialect(appID: String = "emuapp", appKey: String = "emu-app-key", clientID: String? = nil,
                    clientSecret: String? = nil, storeClock: (@Sendable () -> Date)? = nil,
                    configure: (inout KiiDialect.Configuration) -> Void = { _ in }) throws -> KiiDialect {
    let store = try LocalBackend.inMemory(context: BackendContext(clock: storeClock ?? { Date() }),
                                          options: LocalBackend.Options(passwordHashing: .light))
    var configuration = KiiDialect.Configuration(appID: appID, appKey: appKey, clientID: clientID, clientSecret: clientSecret)
    configure(&configuration)
    return KiiDialect(store: store, configuration: configuration)
}

/// A Kii client talking to a dialect in-process.
func kiiClient(_ dialect: KiiDialect, admin: Bool = false) -> KiiBackend {
    let c = dialect.configuration
    var configuration = KiiConfiguration(appID: c.appID, appKey: c.appKey, baseURL: "http://127.0.0.1:8080/api")
    if admin, let id = c.clientID, let secret = c.clientSecret {
        configuration.adminCredentials = .init(clientID: id, clientSecret: secret)
    }
    return KiiBackend(configuration: configuration, context: BackendContext(transport: EmulatorTransport(dialect)))
}

/// A raw request to the dialect, as a Kii SDK sends it.
func kiiRequest(_ dialect: KiiDialect, _ method: String, _ path: String, json: JSON? = nil, body: Data? = nil,
                contentType: String? = nil, token: String? = nil, headers: [(String, String)] = []) -> HTTPRequest {
    var request = HTTPRequest(method: method, url: URL(string: "http://127.0.0.1:8080/api" + path)!,
                              headers: HTTPHeaders([("X-Kii-AppID", dialect.configuration.appID), ("X-Kii-AppKey", dialect.configuration.appKey)]),
                              body: json.map { $0.data() } ?? body)
    if let contentType { request.headers["Content-Type"] = contentType }
    else if json != nil { request.headers["Content-Type"] = "application/json" }
    if let token { request.headers["Authorization"] = "Bearer \(token)" }
    for (n, v) in headers { request.headers[n] = v }
    return request
}

func kiiErrorCode(_ response: HTTPResponse) -> String? {
    (try? JSON.parse(response.body))?["errorCode"]?.stringValue
}

@Suite("Kii dialect")
struct KiiDialectTests {
    @Test("the conformance suite passes live against the dialect wherever the Kii adapter passes in replay")
    func conformanceLive() async throws {
        let dialect = try makeKiiDialect()
        let suite = try ConformanceSuite.bundled()
        let url = try BackendURL(parsing: dialect.backendURL(host: "127.0.0.1", port: 8080))
        let live = await ConformanceRunner.live(adapter: "kii", factory: KiiBackendFactory(), url: url,
                                                transport: EmulatorTransport(dialect), scenarios: suite.scenarios)
        let bad = live.filter { $0.outcome != .passed && $0.outcome != .skipped }
        #expect(bad.isEmpty, "\(bad.map { "\($0.scenario): \($0.outcome) \($0.reason ?? "")" }.joined(separator: "\n"))")
        let replay = await ConformanceRunner.replay(adapter: "kii", factory: KiiBackendFactory(),
                                                    cassettes: ConformanceSuite.bundledFixtures.appendingPathComponent("Cassettes/kii"),
                                                    scenarios: suite.scenarios)
        let passedInReplay = Set(replay.filter { $0.outcome == .passed }.map(\.scenario))
        let passedLive = Set(live.filter { $0.outcome == .passed }.map(\.scenario))
        #expect(passedInReplay.count >= 36)
        #expect(passedInReplay.subtracting(passedLive).isEmpty, "pass in replay only: \(passedInReplay.subtracting(passedLive).sorted())")
        #expect(passedLive.subtracting(passedInReplay).isEmpty, "pass live only: \(passedLive.subtracting(passedInReplay).sorted())")
        print("kii live conformance: \(passedLive.count) passed, \(live.filter { $0.outcome == .skipped }.count) skipped; replay \(passedInReplay.count) passed, \(replay.filter { $0.outcome == .skipped }.count) skipped")
    }
}
