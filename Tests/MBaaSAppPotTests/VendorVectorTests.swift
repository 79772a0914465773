import Foundation
import MBaaSCore
import Testing

@testable import MBaaSAppPot

// Test vectors from the vendor's own client and its specs, per server generation. Each vector names its source
// (repository, branch, path); the JSON literals are this project's statements of the shapes those sources send
// and expect (app ids and accounts are the specs' trial values, keys and tokens are made up), not copies.
//
// Sources:
// - ncdcdev/apppot-sdk-js, branches v2.3 (v2 servers), v3 and v4: `src/ts/*.ts`, `spec/*`.
// - The AppPot iOS guide (seed 000_75bc25ab36a6f85f.txt) for `validTime`.

/// Answers scripted responses by `"METHOD last/segments"` and keeps every request.
final class ScriptedTransport: HTTPTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var sent: [TransportRequest] = []
    private let answers: [String: (Int, String, String)]

    /// `answers`: key `"GET anonymousTokens"` (method and the path below the app version) to status and body.
    init(_ answers: [String: (status: Int, body: String)], contentType: String = "application/json;charset=UTF-8") {
        self.answers = answers.mapValues { ($0.status, $0.body, contentType) }
    }

    init(typed answers: [String: (status: Int, body: String, contentType: String)]) {
        self.answers = answers.mapValues { ($0.status, $0.body, $0.contentType) }
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        lock.withLock { sent.append(request) }
        let segments = request.url.path.split(separator: "/").map(String.init)
        let tail = segments.firstIndex(of: "api").map { segments.dropFirst($0 + 4) }.map(Array.init) ?? segments
        let key = request.method.rawValue + " " + tail.joined(separator: "/")
        guard let (status, body, type) = answers[key] else {
            return TransportResponse(status: 404, headers: [.contentType: "application/json"],
                                body: Data(#"{"status":"error","errCode":199,"description":"Request not found"}"#.utf8))
        }
        return TransportResponse(status: .init(code: status), headers: [.contentType: type], body: Data(body.utf8))
    }

    var requests: [TransportRequest] { lock.withLock { sent } }
    func request(_ method: String, suffix: String) -> TransportRequest? {
        requests.first { $0.method.rawValue == method && $0.url.path.hasSuffix(suffix) }
    }
}

/// The JS specs' trial app (`spec/config.ts`): company 4, app `jp.co.ncdc.sdk`, version `1.0.0`.
func vectorURL(_ generation: String, user: Bool = false) -> String {
    let secret = user ? ":aaaa" : ""
    return "apppot+http://KEY0001\(secret)@trial.test/apppot?company=4&app=jp.co.ncdc.sdk&version=1.0.0&device=UDID-1&generation=\(generation)"
        + (user ? "&user=user001" : "")
}

func vectorBackend(_ transport: ScriptedTransport, _ generation: String, user: Bool = false) async throws -> AppPotBackend {
    try await AppPotBackendFactory().open(try BackendURL(parsing: vectorURL(generation, user: user)),
                                          context: BackendContext(transport: transport, clock: fixedClock)) as! AppPotBackend
}

func body(_ r: TransportRequest?) throws -> JSON { try JSON.parse(try #require(r?.body)) }
func query(_ r: TransportRequest?) -> [String: String] {
    var out: [String: String] = [:]
    for item in URLComponents(url: r!.url, resolvingAgainstBaseURL: false)?.queryItems ?? [] { out[item.name] = item.value ?? "" }
    return out
}

/// The v2.3 login answer (the `authInfor` spelling the v2.3 SDK renames, `validTime` absolute as in the iOS guide).
let v2LoginAnswer = """
    {"status":"OK","errCode":0,"description":null,"authInfor":{"userTokens":"c0ffee01","validTime":1470000416960,
     "userId":205,"userInfo":{"account":"user001","firstName":"Taro","lastName":"Yamada"},
     "groupsAndRoles":[{"groupId":7,"groupName":"sdk-test","description":"test group","roleName":"Admin","roleId":3}]}}
    """

@Suite("AppPot vendor vectors: v2 (apppot-sdk-js v2.3)")
struct VendorVectorsV2 {
    static let auth: [String: (status: Int, body: String)] = [
        "GET anonymousTokens": (200, #"{"status":"OK","errCode":0,"description":null,"results":"a11a11a1"}"#),
        "POST auth/login": (200, v2LoginAnswer),
    ]

    @Test("anonymous token and login — apppot-sdk-js v2.3 src/ts/local-authenticator.ts (getAnonymousToken, apiLogin); validTime: iOS guide seed 000")
    func login() async throws {
        let t = ScriptedTransport(Self.auth)
        let b = try await vectorBackend(t, "v2")
        let session = try await b.logIn(username: "user001", password: "aaaa")
        let anon = try #require(t.request("GET", suffix: "/anonymousTokens"))
        #expect(query(anon) == ["appKey": "KEY0001", "deviceUDID": "UDID-1"])
        #expect(anon.headers["apppot-token"] == nil && anon.body == nil)
        let login = try #require(t.request("POST", suffix: "/auth/login"))
        #expect(login.headers["apppot-token"] == "a11a11a1")
        #expect(try body(login) == JSON.parse("""
            {"username":"user001","password":"aaaa","appId":"jp.co.ncdc.sdk","deviceUDID":"UDID-1","isPush":false,
             "appVersion":"1.0.0","companyId":4}
            """))
        #expect(session.token == "c0ffee01" && session.userId == "205" && session.username == "user001")
        // validTime 1470000416960 is an absolute time (2016-07-31T21:26:56.960Z), not 46 years from now.
        #expect(session.expiresAt == Date(timeIntervalSince1970: 1_470_000_416.960))
        #expect(session.extras["groupIds"] == "7" && session.extras["roles"] == "Admin")
        #expect(login.url.path == "/apppot/api/4/jp.co.ncdc.sdk/1.0.0/auth/login")
    }

    @Test("count answers a top-level count — apppot-sdk-js v2.3 spec/model.test.ts ('countでレコードの件数を取得できる': count is 20)")
    func count() async throws {
        var answers = Self.auth
        answers["POST data/query/Task/count"] = (200, #"{"status":"OK","errCode":0,"description":null,"count":20}"#)
        let t = ScriptedTransport(answers)
        let b = try await vectorBackend(t, "v2", user: true)
        #expect(try await b.count(Query("Task")) == 20)
        #expect(try body(t.request("POST", suffix: "/data/query/Task/count")) == JSON.parse(#"{"from":{"phyName":"Task","alias":"Task"}}"#))
    }

    @Test("upload: an entity part {name} with no Content-Type of its own, then the file — apppot-sdk-js src/ts/file.ts (.field('entity', …), .attach('file', …)); the reference's 07.FileAPI capture")
    func uploadParts() throws {
        let form = AppPotFileCodec.uploadForm(name: "a.txt", data: Data("x".utf8), contentType: "text/plain", boundary: "b-1")
        #expect(form.parts.map(\.name) == ["entity", "file"])
        #expect(form.parts[0].contentType == nil && form.parts[0].filename == nil)
        #expect(try JSON.parse(form.parts[0].data) == JSON.object(["name": "a.txt"]))
        let wire = String(decoding: form.encoded(), as: UTF8.self)
        #expect(wire.contains("Content-Disposition: form-data; name=\"entity\"\r\n\r\n{\"name\":\"a.txt\"}"), "\(wire)")
    }

    @Test("range.offset is 1-based — apppot-sdk-js v2.3 src/ts/model.ts limit() (offset+1) and spec/select.test.ts (limit(9, 10) starts at row 11)")
    func offset() async throws {
        var answers = Self.auth
        answers["POST data/query/Task"] = (200, #"{"status":"OK","errCode":0,"description":null,"Task":[]}"#)
        let t = ScriptedTransport(answers)
        let b = try await vectorBackend(t, "v2", user: true)
        b.registerClass(AppPotClassSchema(name: "Task", columns: ["limit": .long]))
        _ = try await b.queryPage(Query("Task").sorted("limit").skip(10).limit(9))
        let sent = try body(t.request("POST", suffix: "/data/query/Task"))
        #expect(try sent["range"] == JSON.parse(#"{"limit":9,"offset":11}"#))
        // The SDK's orderBy entry; the adapter appends objectId as a tie-breaker for stable pages.
        #expect(try sent["orderBy"]?.arrayValue?.first == JSON.parse(##"{"column":"#Task.limit","type":"asc"}"##))
    }

    @Test("NULL columns come back as \"\" and read as absent — apppot-sdk-js v2.3 src/ts/model.ts parseColumns (commit 5321b55)")
    func nullAsEmpty() async throws {
        var answers = Self.auth
        answers["GET data/Task/Task_1"] = (200, """
            {"status":"OK","errCode":0,"description":null,"Task":[{"objectId":"Task_1","title":"t","description":"",
             "limit":"","num":"","done":"","rate":"","due":"","scopeType":"2","createUserId":"205","groupIds":"{7}",
             "createTime":"1470000000","updateTime":"1470000000","serverCreateTime":"2016-07-31T12:00:00.000+09:00",
             "serverUpdateTime":"2016-07-31T12:00:00.000+09:00","serverRecordStatus":"1"}]}
            """)
        let t = ScriptedTransport(answers)
        let b = try await vectorBackend(t, "v2", user: true)
        b.registerClass(AppPotClassSchema(name: "Task", columns: [
            "title": .varchar(100), "description": .varchar(255), "limit": .long, "num": .integer, "done": .bool,
            "rate": .double, "due": .dateTime,
        ]))
        let r = try await b.get(className: "Task", id: "Task_1")
        #expect(r.fields == ["title": "t"])
        #expect(r.acl == ACL([.group("7"): .readWrite]))
    }

    @Test("writes: doubles as JS text, bool 1/0, default scopeType 2 — apppot-sdk-js v2.3 src/ts/model.ts formatColumns, filterDefinedColumnOnly (defaultScope = ScopeType.Group, commit 20574ee)")
    func write() async throws {
        var answers = Self.auth
        answers["POST data/batch/addData"] = (200, """
            {"status":"OK","errCode":0,"description":null,"results":[{"objectId":"Task_9",
             "serverCreateTime":"2016-07-31T12:00:00.000+09:00","serverUpdateTime":"2016-07-31T12:00:00.000+09:00"}]}
            """)
        let t = ScriptedTransport(answers)
        let b = try await vectorBackend(t, "v2", user: true)
        b.registerClass(AppPotClassSchema(name: "Task", columns: ["rate": .double, "done": .bool, "title": .varchar(100)]))
        _ = try await b.create(Record(className: "Task", fields: ["rate": 5, "done": true, "title": "x"]))
        let sent = try body(t.request("POST", suffix: "/data/batch/addData"))
        #expect(sent["objectName"] == "Task")
        let row = try #require(sent["data"]?.arrayValue?.first)
        #expect(row["rate"] == "5" && row["done"] == 1 && row["title"] == "x" && row["scopeType"] == 2)
    }

    @Test("GET users/{id} sends ?token= and the header — apppot-sdk-js v2.3 src/ts/user.ts findById; docs 04.2 (token required)")
    func currentUser() async throws {
        var answers = Self.auth
        answers["GET users/205"] = (200, """
            {"status":"OK","errCode":0,"description":null,"user":{"userId":205,"account":"user001","firstName":"Taro",
             "lastName":"Yamada","groupRoleMap":[{"group":{"groupId":7,"groupName":"sdk-test"},"role":{"roleName":"Admin","roleId":3}}]}}
            """)
        let t = ScriptedTransport(answers)
        let b = try await vectorBackend(t, "v2", user: true)
        let u = try await b.currentUser()
        let r = try #require(t.request("GET", suffix: "/users/205"))
        #expect(query(r) == ["token": "c0ffee01"] && r.headers["apppot-token"] == "c0ffee01")
        #expect(u.id == "205" && u.groups == ["7"] && u.roles == ["Admin"])
    }

    @Test("a 121 answer at HTTP 200 ends the session — apppot-sdk-js v2.3 spec/logout.test.ts, src/ts/ajax.ts (status error is an error at any HTTP status)")
    func tokenGone() async throws {
        var answers = Self.auth
        answers["GET users/205"] = (200, #"{"status":"error","errCode":121,"description":"Token does not exist"}"#)
        let t = ScriptedTransport(answers)
        let b = try await vectorBackend(t, "v2", user: true)
        let e = try await #require(throws: MBaaSError.self) { try await b.currentUser() }
        #expect(e.vendorCode == "121")
        #expect(await b.session == nil)
    }

    @Test("downloads send no Accept header — apppot-sdk-js v2.3 src/ts/ajax.ts (octet-stream passed through), src/ts/file.ts")
    func download() async throws {
        let t = ScriptedTransport(typed: [
            "GET anonymousTokens": (200, #"{"status":"OK","errCode":0,"description":null,"results":"a11a11a1"}"#, "application/json"),
            "POST auth/login": (200, v2LoginAnswer, "application/json"),
            "GET files/0000_a.txt": (200, "hello", "application/octet-stream"),
        ])
        let b = try await vectorBackend(t, "v2", user: true)
        let data = try await b.download(FileReference(name: "0000_a.txt"))
        #expect(String(decoding: data, as: UTF8.self) == "hello")
        let r = try #require(t.request("GET", suffix: "/files/0000_a.txt"))
        #expect(r.headers["Accept"] == nil && query(r) == ["userToken": "c0ffee01"])
    }
}

@Suite("AppPot vendor vectors: v3 (apppot-sdk-js v3)")
struct VendorVectorsV3 {
    @Test("login is as v2: GET anonymousTokens, then the username body with the anonymous token — apppot-sdk-js v3 src/ts/local-authenticator.ts")
    func login() async throws {
        let t = ScriptedTransport(VendorVectorsV2.auth)
        let b = try await vectorBackend(t, "v3")
        let s = try await b.logIn(username: "user001", password: "aaaa")
        #expect(query(t.request("GET", suffix: "/anonymousTokens")) == ["appKey": "KEY0001", "deviceUDID": "UDID-1"])
        let login = try #require(t.request("POST", suffix: "/auth/login"))
        #expect(login.headers["apppot-token"] == "a11a11a1")
        #expect(try body(login) == JSON.parse("""
            {"username":"user001","password":"aaaa","appId":"jp.co.ncdc.sdk","deviceUDID":"UDID-1","isPush":false,
             "appVersion":"1.0.0","companyId":4}
            """))
        #expect(s.token == "c0ffee01")
    }

    @Test("count answers a top-level count — apppot-sdk-js v3 spec/model_spec.js (count is 20)")
    func count() async throws {
        var answers = VendorVectorsV2.auth
        answers["POST data/query/Task/count"] = (200, #"{"status":"OK","errCode":0,"description":null,"count":20}"#)
        let b = try await vectorBackend(ScriptedTransport(answers), "v3", user: true)
        #expect(try await b.count(Query("Task")) == 20)
    }

    @Test("range.offset is 0-based — apppot-sdk-js v3 src/ts/model.ts limit() and spec/select_spec.js (limit(9, 10) starts at row 11)")
    func offset() async throws {
        var answers = VendorVectorsV2.auth
        answers["POST data/query/Task"] = (200, #"{"status":"OK","errCode":0,"description":null,"Task":[]}"#)
        let t = ScriptedTransport(answers)
        let b = try await vectorBackend(t, "v3", user: true)
        b.registerClass(AppPotClassSchema(name: "Task", columns: ["limit": .long]))
        _ = try await b.queryPage(Query("Task").sorted("limit").skip(10).limit(9))
        #expect(try body(t.request("POST", suffix: "/data/query/Task"))["range"] == JSON.parse(#"{"limit":9,"offset":10}"#))
        #expect(AppPotGeneration.v3.rangeOffset(skip: 0) == 0 && AppPotGeneration.v2.rangeOffset(skip: 0) == 1)
    }

    @Test("column types datetime, double, text, float, decimal — apppot-sdk-js v3 src/ts/database.ts _buildColumnItem, src/ts/types.ts DataType")
    func columnTypes() throws {
        #expect(try AppPotColumnType(wireType: "datetime", fieldLength: nil) == .dateTime)
        #expect(try AppPotColumnType(wireType: "double", fieldLength: nil) == .double)
        #expect(try AppPotColumnType(wireType: "float", fieldLength: nil) == .double)
        #expect(try AppPotColumnType(wireType: "text", fieldLength: nil) == .text)
        #expect(try AppPotColumnType(wireType: "decimal", fieldLength: nil) == .decimal)
        let table = AppPotClassSchema(name: "Task", columns: ["due": .dateTime, "rate": .double, "done": .bool, "title": .varchar(100)])
            .tableJSON(for: .v3)
        let cols = Dictionary(uniqueKeysWithValues: table["columns"]!.arrayValue!.map { ($0["colName"]!.stringValue!, $0) })
        #expect(try cols["due"] == JSON.parse(#"{"colName":"due","type":"datetime"}"#))
        #expect(try cols["rate"] == JSON.parse(#"{"colName":"rate","type":"double"}"#))
        #expect(try cols["done"] == JSON.parse(#"{"colName":"done","type":"varchar","fieldLength":1}"#))
        #expect(try cols["title"] == JSON.parse(#"{"colName":"title","type":"varchar","fieldLength":100}"#))
        #expect(try cols["objectId"] == JSON.parse(#"{"colName":"objectId","type":"varchar"}"#))
    }

    @Test("v3 rows decode: \"\" is null for every type, datetime epoch ms, double/float numbers, decimal exact — apppot-sdk-js v3 src/ts/model.ts parseColumns")
    func decodeRow() throws {
        let schema = AppPotClassSchema(name: "Task", columns: [
            "due": .dateTime, "rate": .double, "price": .decimal, "memo": .text, "n": .long,
        ])
        let row = try JSON.parse("""
            {"objectId":"Task_1","due":"1470000416960","rate":"2.5","price":"12.345678901234567890","memo":"","n":"",
             "scopeType":"2","groupIds":"{7}","createUserId":"205","serverUpdateTime":"2018-07-01T00:00:00.000+09:00"}
            """).objectValue!
        let r = try AppPotRowCodec.decodeRecord(row, className: "Task", schema: schema)
        #expect(r.fields == ["due": .date(Date(timeIntervalSince1970: 1_470_000_416.960)), "rate": 2.5,
                             "price": "12.345678901234567890"])
    }

    @Test("v3 writes doubles as numbers — apppot-sdk-js v3 src/ts/model.ts formatColumns")
    func writeDouble() throws {
        #expect(try AppPotValueCodec.wire(5, column: .double, field: "rate", generation: .v3) == 5)
        #expect(try AppPotValueCodec.wire(5.25, column: .double, field: "rate", generation: .v3) == 5.25)
    }
}

@Suite("AppPot vendor vectors: v4 (apppot-sdk-js v4)")
struct VendorVectorsV4 {
    static let answers: [String: (status: Int, body: String)] = [
        "POST anonymousTokens": (200, """
            {"status":"OK","errCode":0,"description":null,"authInfo":{"userTokens":"b0b0b0b0","userInfo":{"account":"anon-42"},
             "groupsAndRoles":[{"groupId":3,"groupName":"anonymous","roleName":"Anonymous User","roleId":6}]}}
            """),
        "POST auth/login": (200, v2LoginAnswer.replacingOccurrences(of: "authInfor", with: "authInfo")),
    ]

    @Test("POST anonymousTokens {appKey} answers authInfo — apppot-sdk-js v4 src/ts/local-authenticator.ts getAnonymousToken, spec/login_spec.js (Anonymous User, roleId 6)")
    func anonymous() async throws {
        let t = ScriptedTransport(Self.answers)
        let b = try await vectorBackend(t, "v4")
        #expect(try await b.anonymousToken() == "b0b0b0b0")
        let r = try #require(t.request("POST", suffix: "/anonymousTokens"))
        #expect(try body(r) == JSON.parse(#"{"appKey":"KEY0001"}"#))
        #expect(r.headers["apppot-token"] == nil)
        #expect(t.request("GET", suffix: "/anonymousTokens") == nil)
    }

    @Test("login is POST auth/login {account, password, appKey} answered under authInfo — apppot-sdk-js v4 src/ts/local-authenticator.ts apiLogin")
    func login() async throws {
        let t = ScriptedTransport(Self.answers)
        let b = try await vectorBackend(t, "v4")
        let s = try await b.logIn(username: "user001", password: "aaaa")
        let r = try #require(t.request("POST", suffix: "/auth/login"))
        #expect(try body(r) == JSON.parse(#"{"account":"user001","password":"aaaa","appKey":"KEY0001"}"#))
        #expect(r.headers["apppot-token"] == nil)
        #expect(s.token == "c0ffee01" && s.userId == "205")
    }

    @Test("generation=auto finds a v4 server: GET anonymousTokens is not found, POST follows")
    func detect() async throws {
        let t = ScriptedTransport(Self.answers)
        let b = try await vectorBackend(t, "auto")
        #expect(b.generation == .v2)
        _ = try await b.logIn(username: "user001", password: "aaaa")
        #expect(b.generation == .v4)
        #expect(t.requests.map { "\($0.method) \($0.url.lastPathComponent)" } == ["GET anonymousTokens", "POST anonymousTokens", "POST login"])
        // A v2 server answers the GET, and v2 is kept.
        let t2 = ScriptedTransport(VendorVectorsV2.auth)
        let b2 = try await vectorBackend(t2, "auto")
        _ = try await b2.logIn(username: "user001", password: "aaaa")
        #expect(b2.generation == .v2)
    }
}

@Suite("AppPot numbers as JavaScript prints them")
struct JSNumberTextTests {
    @Test("String(n) as JS writes it (apppot-sdk-js v2.3 src/ts/model.ts formatColumns: columns[key] + \"\")")
    func text() {
        let cases: [(Double, String)] = [(5, "5"), (5.5, "5.5"), (-0.25, "-0.25"), (0, "0"), (-0.0, "0"), (1e21, "1e+21"),
                                         (1e-7, "1e-7"), (0.00001, "0.00001"), (1.5e-5, "0.000015"), (0.1 + 0.2, "0.30000000000000004"),
                                         (123456789, "123456789"), (-42, "-42")]
        for (d, js) in cases { #expect(AppPotNumberText.js(d) == js, "\(d)") }
    }
}
