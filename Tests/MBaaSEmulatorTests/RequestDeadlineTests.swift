import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSKiiWire
import MBaaSLocal
import MBaaSSalesforceWire
import MBaaSTesting
import Testing

/// The server's deadline for one request (#33.9): the work is cancelled, a success it still reaches is kept, and any
/// other outcome becomes the dialect's timeout-style error. No wall-clock assertion: the fake dialects below end only
/// when they are cancelled, so the order of events is fixed.
@Suite("Request deadline")
struct RequestDeadlineTests {
    /// A dialect whose every request waits until it is cancelled, then answers `status`; `answer(_:to:)` answers 599
    /// with the error's message and the limit's scope.
    struct WaitsForCancellation: EmulatorDialect {
        var status: Int
        var name: String { "fake" }
        var maxRequestBodySize: Int { 1 << 20 }
        func respond(to request: TransportRequest) async -> TransportResponse {
            let gate = Gate()
            await withTaskCancellationHandler {
                await gate.wait()
            } onCancel: {
                gate.open()
            }
            return TransportResponse(status: .init(code: status), headers: [:], body: Data("late".utf8))
        }
        func requestTooLarge(limit: Int) -> TransportResponse { TransportResponse(status: .init(code: 413), headers: [:], body: Data()) }
        func answer(_ error: MBaaSError, to request: TransportRequest) -> TransportResponse {
            let scope = QueryTimeLimitExceeded.of(error)?.scope.rawValue ?? "none"
            return TransportResponse(status: .init(code: 599), headers: [:], body: Data("\(scope): \(error.message)".utf8))
        }
        func backendURL(host: String, port: Int) -> String { "fake://\(host):\(port)" }
    }

    /// A one-shot latch: `wait` returns once `open` was called (before or after).
    final class Gate: @unchecked Sendable {
        private let lock = NSLock()
        private var opened = false
        private var waiter: CheckedContinuation<Void, Never>?
        func wait() async {
            await withCheckedContinuation { c in
                lock.lock()
                if opened { lock.unlock(); c.resume() } else { waiter = c; lock.unlock() }
            }
        }
        func open() {
            lock.lock()
            opened = true
            let w = waiter
            waiter = nil
            lock.unlock()
            w?.resume()
        }
    }

    static let request = TransportRequest(method: .get, url: URL(string: "http://127.0.0.1:1/x")!)

    @Test("work that fails after the deadline is answered with the dialect's timeout error, naming the deadline")
    func failureBecomesTimeout() async {
        let answer = await RequestDeadline.answer(Self.request, by: WaitsForCancellation(status: 500), within: .milliseconds(10))
        #expect(answer.status.code == 599)
        let text = String(decoding: answer.body, as: UTF8.self)
        #expect(text.hasPrefix("request: the request did not finish within the server's deadline of 10 ms"), "\(text)")
    }

    @Test("work that still succeeds after the deadline (a write that committed) is answered as done")
    func lateSuccessIsKept() async {
        let answer = await RequestDeadline.answer(Self.request, by: WaitsForCancellation(status: 201), within: .milliseconds(10))
        #expect(answer.status.code == 201)
        #expect(String(decoding: answer.body, as: UTF8.self) == "late")
    }

    @Test("work that ends first is the answer, and the timer does not hold it (a 10-minute deadline)")
    func fastWorkIsAnswered() async throws {
        let dialect = try makeDialect()
        let unsigned = TransportRequest(method: .get, url: URL(string: "http://127.0.0.1:1/2013-09-01/classes/Memo")!)
        let answer = await RequestDeadline.answer(unsigned, by: dialect, within: .seconds(600))
        // An unsigned request: NCMB's 401 E401001, straight from the dialect.
        #expect(answer.status.code == 401)
        #expect(String(decoding: answer.body, as: UTF8.self).contains("E401001"))
    }

    /// The request-deadline error as the server builds it.
    static let deadline = MBaaSError(.unavailable, "the request did not finish within the server's deadline of 20 ms",
                                     underlying: QueryTimeLimitExceeded(limit: 0.02, scope: .request))
    /// A query stopped by its matching budget, as the Local store raises it.
    static let budget = MBaaSError(.invalidRequest, "the regular expression '(a|a)+c|!' used up this query's matching budget",
                                   underlying: QueryTimeLimitExceeded(limit: 1))

    @Test("each dialect answers the deadline with its vendor's timeout-style error")
    func dialectsAnswerTheirTimeout() async throws {
        func json(_ r: TransportResponse) -> JSON { (try? JSON.parse(r.body)) ?? .null }
        let ncmb = try makeDialect().answer(Self.deadline, to: Self.request)
        #expect(ncmb.status.code == 503)
        #expect(json(ncmb)["code"]?.stringValue == "E503001")

        let parse = try makeParseDialect().answer(Self.deadline, to: Self.request)
        #expect(parse.status.code == 400)
        #expect(parseCode(parse) == 124)

        let kii = try makeKiiDialect().answer(Self.deadline, to: Self.request)
        #expect(kii.status.code == 503)
        #expect(json(kii)["errorCode"]?.stringValue == "QUERY_TIMEOUT")

        let apppot = try await makeAppPotDialect().answer(Self.deadline, to: Self.request)
        #expect(json(apppot)["errCode"]?.intValue == 131)
        #expect(json(apppot)["status"]?.stringValue == "error")

        let org = try await SalesforceDialectTests.org()
        let rest = TransportRequest(method: .get, url: URL(string: "https://127.0.0.1:8443/services/data/v60.0/query?q=SELECT+Id+FROM+Account")!)
        let salesforce = org.dialect.answer(Self.deadline, to: rest)
        #expect(salesforce.status.code == 400)
        #expect(json(salesforce).arrayValue?.first?["errorCode"]?.stringValue == "REQUEST_RUNNING_TOO_LONG")
        #expect(json(salesforce).arrayValue?.first?["message"]?.stringValue?.contains("deadline of 20 ms") == true)
    }

    @Test("a query's spent matching budget is Kii's 503 QUERY_TIMEOUT and Salesforce's QUERY_TIMEOUT")
    func budgetInKiiAndSalesforce() {
        let kii = KiiErrorBody(Self.budget)
        #expect(kii.errorCode == "QUERY_TIMEOUT")
        #expect(kii.status == 503)
        let (status, item) = SalesforceErrorCodec.restError(for: Self.budget)
        #expect(status == 400)
        #expect(item.errorCode == "QUERY_TIMEOUT")
        // Read back by the clients: unavailable, the vendor code kept.
        #expect(SalesforceErrorCodec.error(for: item, httpStatus: 400).kind == .unavailable)
    }

    @Test("over HTTP: a slow query past --request-timeout answers Parse's 124 naming the deadline; the next request is served")
    func serverDeadline() async throws {
        let dialect = try makeParseDialect()
        let inProcess = EmulatorTransport(dialect)
        let created = try await inProcess.send(parseRequest(dialect, .post, "/classes/Memo",
                                                            json: .object(["s": .string(QueryTimeLimitDialectTests.slowValue)])))
        #expect(created.status.code == 201)
        let running = try await EmulatorServer(dialect: dialect, requestTimeout: .milliseconds(20)).start()
        let http = URLSessionTransport()
        func request(_ whereJSON: String) throws -> TransportRequest {
            var r = parseRequest(dialect, .get, "/classes/Memo")
            r.url = try URL.build(base: running.baseURL, path: dialect.configuration.mount + "/classes/Memo",
                                  query: [("where", whereJSON)])
            return r
        }
        let slow = try await http.send(try request(#"{"s":{"$regex":"\#(QueryTimeLimitDialectTests.slowPattern)"}}"#))
        let quick = try await http.send(try request(#"{"s":"x"}"#))
        await running.stop()
        #expect(slow.status.code == 400)
        #expect(parseCode(slow) == 124)
        let message = (try? JSON.parse(slow.body))?["error"]?.stringValue ?? ""
        #expect(message.contains("deadline of 20 ms"), "\(message)")
        #expect(quick.status.code == 200)
    }
}
