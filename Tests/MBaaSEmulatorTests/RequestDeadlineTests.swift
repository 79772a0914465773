import Foundation
import MBaaSAppPotWire
import MBaaSCore
import MBaaSEmulator
import MBaaSKiiWire
import MBaaSLocal
import MBaaSSalesforceWire
import MBaaSTesting
import Testing

/// The server's deadline for one request (#33.9): the work is cancelled, a success it still reaches is kept, and any
/// other outcome becomes the dialect's timeout-style error. No assertion on how long anything takes but an upper
/// bound far above the deadline: the fake dialects below end only when they are cancelled, so the order of events is
/// fixed.
@Suite("Request deadline", .timeLimit(.minutes(1)))
struct RequestDeadlineTests {
    /// A dialect whose every request waits until it is cancelled, then answers `status` (a success unless
    /// `failsInBody`, as AppPot's 200 errors); `answer(_:to:)` answers 599 with the error's message and the limit's
    /// scope.
    struct WaitsForCancellation: EmulatorDialect {
        var status: Int
        var failsInBody = false
        func isSuccess(_ response: TransportResponse) -> Bool {
            !failsInBody && (200..<300).contains(response.status.code)
        }
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
        let answer = await RequestDeadline(.milliseconds(10)).answer(Self.request, by: WaitsForCancellation(status: 500))
        #expect(answer.status.code == 599)
        let text = String(decoding: answer.body, as: UTF8.self)
        #expect(text.hasPrefix("request: the request did not finish within the server's deadline of 10 ms"), "\(text)")
    }

    @Test("work that still succeeds after the deadline (a write that committed) is answered as done")
    func lateSuccessIsKept() async {
        let answer = await RequestDeadline(.milliseconds(10)).answer(Self.request, by: WaitsForCancellation(status: 201))
        #expect(answer.status.code == 201)
        #expect(String(decoding: answer.body, as: UTF8.self) == "late")
    }

    @Test("an error answered with a 2xx status (AppPot's 200 with status error) is no success: it becomes the timeout")
    func errorInBodyBecomesTimeout() async throws {
        let deadline = RequestDeadline(.milliseconds(10))
        let answer = await deadline.answer(Self.request, by: WaitsForCancellation(status: 200, failsInBody: true))
        #expect(answer.status.code == 599)
        // AppPot's own reading of its answers.
        let apppot = try await makeAppPotDialect()
        #expect(!apppot.isSuccess(AppPotErrorBody(code: 131).response()))
        #expect(apppot.isSuccess(TransportResponse(status: .init(code: 200), headers: [:],
                                                   body: Data(#"{"status":"OK","errCode":0,"description":null,"results":[]}"#.utf8))))
    }

    /// A dialect whose work blocks its thread for `seconds` without looking at cancellation, then fails (500).
    struct BlocksThenFails: EmulatorDialect {
        var seconds: Double
        var name: String { "fake" }
        var maxRequestBodySize: Int { 1 << 20 }
        func respond(to request: TransportRequest) async -> TransportResponse {
            usleep(useconds_t(seconds * 1_000_000))  // blocks, as a synchronous step does
            return TransportResponse(status: .init(code: 500), headers: [:], body: Data("failed".utf8))
        }
        func requestTooLarge(limit: Int) -> TransportResponse { TransportResponse(status: .init(code: 413), headers: [:], body: Data()) }
        func answer(_ error: MBaaSError, to request: TransportRequest) -> TransportResponse {
            TransportResponse(status: .init(code: 599), headers: [:], body: Data(error.message.utf8))
        }
        func backendURL(host: String, port: Int) -> String { "fake://\(host):\(port)" }
    }

    @Test("work that fails past its deadline is the timeout even if it never saw the cancellation; failing in time is its own answer")
    func failurePastTheDeadlineIsTheTimeout() async {
        let late = await RequestDeadline(.milliseconds(20)).answer(Self.request, by: BlocksThenFails(seconds: 0.08))
        #expect(late.status.code == 599 && String(decoding: late.body, as: UTF8.self).contains("deadline of 20 ms"))
        let inTime = await RequestDeadline(.seconds(60)).answer(Self.request, by: BlocksThenFails(seconds: 0.001))
        #expect(inTime.status.code == 500)
    }

    /// A dialect whose every request is a point read (``EmulatorDialect/isPointRead(_:)``): it notes the task it ran
    /// in, blocks for `seconds` and answers `status`.
    struct PointRead: EmulatorDialect {
        var seconds: Double
        var status: Int
        let ranIn = Ran()
        final class Ran: @unchecked Sendable {
            private let lock = NSLock()
            private var task: UnsafeCurrentTask?
            var value: UnsafeCurrentTask? { lock.withLock { task } }
            func note() { withUnsafeCurrentTask { t in lock.withLock { task = t } } }
        }
        var name: String { "fake" }
        var maxRequestBodySize: Int { 1 << 20 }
        func isPointRead(_ request: TransportRequest) -> Bool { true }
        func respond(to request: TransportRequest) async -> TransportResponse {
            ranIn.note()
            usleep(useconds_t(seconds * 1_000_000))
            return TransportResponse(status: .init(code: status), headers: [:], body: Data("read".utf8))
        }
        func requestTooLarge(limit: Int) -> TransportResponse { TransportResponse(status: .init(code: 413), headers: [:], body: Data()) }
        func answer(_ error: MBaaSError, to request: TransportRequest) -> TransportResponse {
            TransportResponse(status: .init(code: 599), headers: [:], body: Data(error.message.utf8))
        }
        func backendURL(host: String, port: Int) -> String { "fake://\(host):\(port)" }
    }

    @Test("a point read runs in the request's own task and is judged by its end: a failure past the deadline is the timeout, a late success and a failure in time are their own answers")
    func pointReadsRunInPlace() async {
        let late = PointRead(seconds: 0.06, status: 404)
        let answer = await RequestDeadline(.milliseconds(10)).answer(Self.request, by: late)
        #expect(answer.status.code == 599 && String(decoding: answer.body, as: UTF8.self).contains("deadline of 10 ms"))
        #expect(late.ranIn.value == withUnsafeCurrentTask { $0 })
        let lateSuccess = await RequestDeadline(.milliseconds(10)).answer(Self.request, by: PointRead(seconds: 0.06, status: 200))
        #expect(lateSuccess.status.code == 200 && String(decoding: lateSuccess.body, as: UTF8.self) == "read")
        let inTime = await RequestDeadline(.seconds(60)).answer(Self.request, by: PointRead(seconds: 0, status: 404))
        #expect(inTime.status.code == 404)
        // Any other request runs in a task of its own, which the watchdog can cancel.
        let other = BlocksThenFails(seconds: 0)
        _ = await RequestDeadline(.seconds(60)).answer(Self.request, by: other)
        let ranIn = PointRead.Ran()
        struct NotedElsewhere: EmulatorDialect {
            let ranIn: PointRead.Ran
            var name: String { "fake" }
            var maxRequestBodySize: Int { 1 << 20 }
            func respond(to request: TransportRequest) async -> TransportResponse {
                ranIn.note()
                return TransportResponse(status: .init(code: 200), headers: [:], body: Data())
            }
            func requestTooLarge(limit: Int) -> TransportResponse { TransportResponse(status: .init(code: 413), headers: [:], body: Data()) }
            func backendURL(host: String, port: Int) -> String { "fake://\(host):\(port)" }
        }
        _ = await RequestDeadline(.seconds(60)).answer(Self.request, by: NotedElsewhere(ranIn: ranIn))
        #expect(ranIn.value != nil && ranIn.value != withUnsafeCurrentTask { $0 })
    }

    @Test("each dialect names its GET of one record a point read, and nothing else")
    func dialectsNamePointReads() async throws {
        func request(_ method: TransportRequest.Method, _ url: String) -> TransportRequest {
            TransportRequest(method: method, url: URL(string: "http://127.0.0.1:8080" + url)!)
        }
        let ncmb = try makeDialect()
        #expect(ncmb.isPointRead(request(.get, "/2013-09-01/classes/Memo/abc")))
        #expect(ncmb.isPointRead(request(.get, "/2013-09-01/users/abc")))
        #expect(!ncmb.isPointRead(request(.get, "/2013-09-01/classes/Memo")))
        #expect(!ncmb.isPointRead(request(.put, "/2013-09-01/classes/Memo/abc")))
        #expect(!ncmb.isPointRead(request(.get, "/2013-09-01/files/a.txt")))
        // A store that does not say its point reads run to their end (a wrapper forwarding to Local) keeps a task the
        // deadline can cancel.
        let inner = try LocalBackend.inMemory()
        defer { Task { await inner.close() } }
        let wrapped = NCMBDialect(store: ForwardingServerStore(inner: inner, calls: CallCounter()), configuration: ncmb.configuration)
        #expect(!wrapped.isPointRead(request(.get, "/2013-09-01/classes/Memo/abc")))

        let parse = try makeParseDialect()
        let mount = parse.configuration.mount
        #expect(parse.isPointRead(request(.get, mount + "/classes/Memo/abc")))
        #expect(!parse.isPointRead(request(.get, mount + "/classes/Memo")))
        #expect(!parse.isPointRead(request(.delete, mount + "/classes/Memo/abc")))
        #expect(!parse.isPointRead(request(.get, mount + "/files/emuapp/a.txt")))

        let kii = try makeKiiDialect()
        #expect(kii.isPointRead(request(.get, "/api/apps/emuapp/buckets/notes/objects/o1")))
        #expect(!kii.isPointRead(request(.post, "/api/apps/emuapp/buckets/notes/objects")))
        #expect(!kii.isPointRead(request(.post, "/api/apps/emuapp/buckets/notes/query")))
        #expect(!kii.isPointRead(request(.get, "/api/apps/emuapp/buckets/notes/objects/o1/body")))
        #expect(kii.isPointRead(request(.get, "/api/apps/emuapp/users/me/buckets/notes/objects/o1")))
        // A user named by e-mail address is a query of the profiles.
        #expect(!kii.isPointRead(request(.get, "/api/apps/emuapp/users/EMAIL:a@example.com/buckets/notes/objects/o1")))

        let apppot = try await makeAppPotDialect()
        let c = apppot.configuration
        let path = AppPotAppPath(contextRoot: c.contextRoot, companyId: c.companyId, appId: c.appId, appVersion: c.appVersion)
        #expect(apppot.isPointRead(request(.get, path.path(.object(className: "Memo", id: "Memo_1")))))
        #expect(!apppot.isPointRead(request(.put, path.path(.object(className: "Memo", id: "Memo_1")))))
        #expect(!apppot.isPointRead(request(.get, path.path(.file("a.txt")))))

        let org = try await SalesforceDialectTests.org()
        #expect(org.dialect.isPointRead(request(.get, "/services/data/v62.0/sobjects/Account/001000000000001AAA")))
        #expect(!org.dialect.isPointRead(request(.patch, "/services/data/v62.0/sobjects/Account/001000000000001AAA")))
        #expect(!org.dialect.isPointRead(request(.get, "/services/data/v62.0/query?q=SELECT+Id+FROM+Account")))
    }

    @Test("one deadline serves many requests at once: each one past it is stopped, each answered once")
    func manyRequests() async {
        let deadline = RequestDeadline(.milliseconds(5))
        let answers = await withTaskGroup(of: Int.self) { group in
            for i in 0..<200 {
                group.addTask { await deadline.answer(Self.request, by: WaitsForCancellation(status: i % 2 == 0 ? 500 : 204)).status.code }
            }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(answers.filter { $0 == 599 }.count == 100)
        #expect(answers.filter { $0 == 204 }.count == 100)
    }

    @Test("work that ends first is the answer, and the timer does not hold it (a 10-minute deadline)")
    func fastWorkIsAnswered() async throws {
        let dialect = try makeDialect()
        let unsigned = TransportRequest(method: .get, url: URL(string: "http://127.0.0.1:1/2013-09-01/classes/Memo")!)
        let clock = ContinuousClock()
        let started = clock.now
        let answer = await RequestDeadline(.seconds(600)).answer(unsigned, by: dialect)
        #expect(clock.now - started < .seconds(60), "the answer waited for the deadline")
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

    @Test("over HTTP: a slow query past --request-timeout answers Parse's 124 naming the deadline")
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
        // The pattern takes the store's 250 ms on the one value before it stops: the 20 ms deadline always passes first.
        let slow = try await http.send(try request(#"{"s":{"$regex":"\#(QueryTimeLimitDialectTests.slowPattern)"}}"#))
        await running.stop()
        #expect(slow.status.code == 400)
        #expect(parseCode(slow) == 124)
        let message = (try? JSON.parse(slow.body))?["error"]?.stringValue ?? ""
        #expect(message.contains("deadline of 20 ms"), "\(message)")
    }
}
