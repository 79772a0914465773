import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal
import MBaaSParse
import MBaaSParseWire
import MBaaSTesting
import Testing

/// A fresh Parse dialect on an in-memory store, with cheap password hashing.
func makeParseDialect(masterKey: String? = "emu-master-key",
                      configure: (inout ParseDialect.Configuration) -> Void = { _ in }) throws -> ParseDialect {
    let store = try LocalBackend.inMemory(options: LocalBackend.Options(passwordHashing: .testing))
    var configuration = ParseDialect.Configuration(applicationId: "emuapp", restKey: "emu-rest-key", masterKey: masterKey)
    configure(&configuration)
    return ParseDialect(store: store, configuration: configuration)
}

/// The Parse client talking to a dialect in-process (with the master key when `master`).
func parseClient(_ dialect: ParseDialect, master: Bool = false) async throws -> any Backend {
    var text = dialect.backendURL(host: "127.0.0.1", port: 8080)
    if master, let key = dialect.configuration.masterKey { text += "?masterKey=" + percentEncode(key) }
    return try await ParseBackendFactory().open(try BackendURL(parsing: text),
                                                context: BackendContext(transport: EmulatorTransport(dialect)))
}

/// A raw request to the dialect, as a Parse SDK sends it (REST key unless `master`).
func parseRequest(_ dialect: ParseDialect, _ method: TransportRequest.Method, _ path: String, json: JSON? = nil,
                  body: Data? = nil, contentType: String? = nil, token: String? = nil, master: Bool = false) -> TransportRequest {
    let c = dialect.configuration
    var request = TransportRequest(method: method, url: URL(string: "http://127.0.0.1:8080" + c.mount + path)!,
                                   body: json.map { $0.data() } ?? body)
    request.headers[ParseHeader.applicationId] = c.applicationId
    if master, let key = c.masterKey { request.headers[ParseHeader.masterKey] = key }
    else { request.headers[ParseHeader.restAPIKey] = c.restKey }
    if let contentType { request.headers[.contentType] = contentType }
    else if json != nil { request.headers[.contentType] = "application/json" }
    if let token { request.headers[ParseHeader.sessionToken] = token }
    return request
}

func parseCode(_ response: TransportResponse) -> Int64? {
    (try? JSON.parse(response.body))?["code"]?.intValue
}

@Suite("Parse dialect")
struct ParseDialectTests {
    @Test("the conformance suite passes live against the dialect (every scenario the Parse adapter can run)")
    func conformanceLive() async throws {
        let dialect = try makeParseDialect()
        let suite = try ConformanceSuite.bundled()
        let url = try BackendURL(parsing: dialect.backendURL(host: "127.0.0.1", port: 8080))
        let live = await ConformanceRunner.live(adapter: "parse", factory: ParseBackendFactory(), url: url,
                                                transport: EmulatorTransport(dialect), scenarios: suite.scenarios)
        let bad = live.filter { $0.outcome != .passed && $0.outcome != .skipped }
        #expect(bad.isEmpty, "\(bad.map { "\($0.scenario): \($0.outcome) \($0.reason ?? "")" }.joined(separator: "\n"))")
        let passed = live.filter { $0.outcome == .passed }.count
        #expect(passed >= 60)
        print("parse live conformance: \(passed) passed, \(live.filter { $0.outcome == .skipped }.count) skipped")
    }
}
