import Foundation
import MBaaSCore
import MBaaSTesting
import Testing
@testable import MBaaSNCMB

/// What the vendors' own SDKs and pages show, where the adapter used to differ (issue #13). Each test names its
/// evidence: `[sdk] repo path` or `[doc] page`.
@Suite("NCMB against the vendor evidence")
struct VendorEvidenceTests {
    static let appKey = BackendSimulatorTests.appKey
    static let clientKey = BackendSimulatorTests.clientKey
    static let start = BackendSimulatorTests.start

    static func make(url options: String = "", signResponses: Bool = false, verify: Bool = false) throws -> (NCMBBackend, CapturingTransport, NCMBSimulator) {
        let sim = NCMBSimulator(applicationKey: appKey, clientKey: clientKey, start: start, signResponses: signResponses)
        let capture = CapturingTransport(sim)
        var config = try NCMBConfiguration(url: BackendURL(parsing: "ncmb://\(appKey):\(clientKey)@mbaas.api.nifcloud.com\(options)"))
        config.verifyResponseSignature = verify
        return (NCMBBackend(configuration: config, context: BackendContext(transport: capture, clock: { start })), capture, sim)
    }

    // MARK: 1. Content-Type

    /// [sdk] ncmb_swift NCMBRequest.swift, ncmb_android NCMBRequest.java, ncmb_js lib/request.js send
    /// `Content-Type: application/json` on every request; [doc] rest/common/query.html's curl GET sends it too.
    @Test("every request carries Content-Type: application/json, GET and DELETE included; uploads keep multipart")
    func contentTypeOnEveryRequest() async throws {
        let (ncmb, capture, _) = try Self.make()
        let r = try await ncmb.create(Record(className: "Memo", fields: ["a": 1]))
        _ = try await ncmb.get(className: "Memo", id: r.id!)
        _ = try await ncmb.queryPage(Query("Memo"))
        let file = try await ncmb.upload(FileUpload(name: "a.txt", source: .data(Data("x".utf8)), contentType: "text/plain"))
        _ = try await ncmb.download(file)
        try await ncmb.deleteFile(file)
        try await ncmb.delete(className: "Memo", id: r.id!)
        _ = try await ncmb.signUp(username: "ann", password: "pw-1", email: nil, fields: [:])
        try await ncmb.logOut(confirmWithServer: true)
        let requests = capture.requests
        #expect(requests.count == 9)
        for request in requests {
            let type = request.headers["Content-Type"]
            if request.method == .post, request.url.path.contains("/files/") {
                #expect(type?.hasPrefix("multipart/form-data; boundary=") == true)
            } else {
                #expect(type == "application/json", "\(request.method) \(request.url.path): \(type ?? "none")")
            }
        }
        #expect(requests.contains { $0.method == .get } && requests.contains { $0.method == .delete })
    }

    // MARK: 2. Response signatures

    static let signer = NCMBSigner(applicationKey: "app", clientKey: "client")
    static let stringToSign = "GET\nmbaas.api.nifcloud.com\n/2013-09-01/files/a.bin\nSignatureMethod=HmacSHA256"

    static func signed(_ message: String, _ body: Data, contentType: String?, status: Int = 200) -> TransportResponse {
        var headers: HTTPFields = HTTPFields([("X-NCMB-Response-Signature", signer.signature(of: message))])
        if let contentType { headers["Content-Type"] = contentType }
        return TransportResponse(status: .init(code: status), headers: headers, body: body)
    }

    /// [sdk] ncmb_android NCMBConnection.java (`asHex(res.responseByte)`), ncmb_ios NCMBURLSession.m (`%02.2hhx`),
    /// ncmb_unity NCMBConnection.cs (`AsHex (responseByte)`): a file body is hashed as the lowercase hex of its bytes.
    @Test("a file body is signed as the lowercase hex of its bytes, not the raw bytes")
    func fileBodyHex() throws {
        let bytes = Data([0x00, 0xAB, 0xFF, 0x10])
        try Self.signer.verifyResponse(Self.signed(Self.stringToSign + "\n00abff10", bytes, contentType: "application/octet-stream"),
                                       stringToSign: Self.stringToSign)
        let raw = Self.signed(Self.stringToSign + "\n" + String(decoding: bytes, as: UTF8.self), bytes, contentType: "image/png")
        let error = #expect(throws: MBaaSError.self) { try Self.signer.verifyResponse(raw, stringToSign: Self.stringToSign) }
        #expect(error?.vendorCode == "E100001")
    }

    /// [sdk] ncmb_unity NCMBConnection.cs / NCMBUtility.cs unescape `\uXXXX` before hashing; the raw form stays
    /// accepted (the real-server vector in SignerTests has no escapes).
    @Test("a JSON body with \\u escapes is accepted signed raw or unescaped, and nothing else")
    func jsonBodyUnescaped() throws {
        let body = Data(#"{"t":"\u3042\ud83c\udf89","q":"a\"b"}"#.utf8)
        let unescaped = #"{"t":"あ🎉","q":"a\"b"}"#
        try Self.signer.verifyResponse(Self.signed(Self.stringToSign + "\n" + unescaped, body, contentType: "application/json;charset=UTF-8"),
                                       stringToSign: Self.stringToSign)
        try Self.signer.verifyResponse(Self.signed(Self.stringToSign + "\n" + String(decoding: body, as: UTF8.self), body,
                                                   contentType: "application/json"), stringToSign: Self.stringToSign)
        #expect(throws: MBaaSError.self) {
            try Self.signer.verifyResponse(Self.signed(Self.stringToSign + "\n" + #"{"t":"x"}"#, body, contentType: "application/json"),
                                           stringToSign: Self.stringToSign)
        }
    }

    /// [sdk] ncmb_android NCMBConnection.java, ncmb_ios NCMBURLSession.m, ncmb_unity NCMBConnection.cs skip the check
    /// without the header; ncmb_unity and ncmb_js check successful responses only.
    @Test("no signature header is not an error; error responses are not checked")
    func absentSignatureAndErrors() async throws {
        try Self.signer.verifyResponse(TransportResponse(status: 200, headers: [.contentType: "application/json"], body: Data("{}".utf8)),
                                       stringToSign: Self.stringToSign)
        struct Forged: HTTPTransport {
            func send(_ request: TransportRequest) async throws -> TransportResponse {
                TransportResponse(status: 404, headers: HTTPFields([("Content-Type", "application/json"), ("X-NCMB-Response-Signature", "forged")]),
                             body: Data(#"{"code":"E404001","error":"No data available."}"#.utf8))
            }
        }
        var config = NCMBConfiguration(applicationKey: "app", clientKey: "client")
        config.verifyResponseSignature = true
        let ncmb = NCMBBackend(configuration: config, context: BackendContext(transport: Forged()))
        let error = await #expect(throws: MBaaSError.self) { _ = try await ncmb.get(className: "Memo", id: "x") }
        #expect(error?.vendorCode == "E404001" && error?.kind == .notFound)
    }

    @Test("with verification on, files download and JSON answers pass against a signing server")
    func endToEndSignedFiles() async throws {
        let (ncmb, _, _) = try Self.make(signResponses: true, verify: true)
        let file = try await ncmb.upload(FileUpload(name: "b.bin", source: .data(Data([0, 1, 254, 255])), contentType: "application/octet-stream"))
        #expect(try await ncmb.download(file) == Data([0, 1, 254, 255]))
        #expect(try await ncmb.count(Query("Memo")) == 0)
    }

    // MARK: 3. Roles

    /// [doc] ncmb.md §1.7 (members of a role through $relatedTo); [sdk] ncmb_js lib/query.js `relatedTo`,
    /// test/mbaas.yml. No SDK queries /roles by belongUser equality.
    @Test("a user's roles are found with $relatedTo, never by equality on belongUser; currentUserRoles=false skips it")
    func rolesThroughRelatedTo() async throws {
        let (ncmb, capture, _) = try Self.make()
        let ann = try await ncmb.signUp(username: "ann", password: "pw-1", email: nil, fields: [:])
        let other = try await ncmb.signUp(username: "bob", password: "pw-1", email: nil, fields: [:])
        try await ncmb.logOut(confirmWithServer: false)
        _ = try await ncmb.logIn(username: "ann", password: "pw-1")
        _ = try await ncmb.createRole(name: "Editors", users: [ann.userId])
        _ = try await ncmb.createRole(name: "Others", users: [other.userId])
        #expect(try await ncmb.currentUser().roles == ["Editors"])
        let wheres = capture.requests.compactMap { r in
            URLComponents(url: r.url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "where" }?.value
        }
        #expect(wheres.filter { $0.contains("$relatedTo") }.count == 2)
        #expect(!wheres.contains { $0.contains("belongUser") && !$0.contains("$relatedTo") })

        let (quiet, quietCapture, _) = try Self.make(url: "?currentUserRoles=false")
        _ = try await quiet.signUp(username: "cy", password: "pw-1", email: nil, fields: [:])
        #expect(try await quiet.currentUser().roles.isEmpty)
        #expect(!quietCapture.requests.contains { $0.url.path.hasSuffix("/roles") })
        #expect(throws: MBaaSError.self) {
            _ = try NCMBConfiguration(url: BackendURL(parsing: "ncmb://a:c@mbaas.api.nifcloud.com?currentUserRoles=maybe"))
        }
    }

    // MARK: 4. Non-ASCII file names

    /// [doc] NCMB UserCommunity #1304: "テスト.ZIP" through ncmb_swift gave E403002; the answer: use ASCII names.
    @Test("an upload under a non-ASCII name is unsupported before anything is sent, naming the rule")
    func nonASCIIFileNames() async throws {
        let (ncmb, capture, _) = try Self.make()
        let error = await #expect(throws: MBaaSError.self) {
            _ = try await ncmb.upload(FileUpload(name: "メモ🎉.txt", source: .data(Data("x".utf8))))
        }
        #expect(error?.kind == .unsupported)
        #expect(error?.message.contains("E403002") == true && error?.message.contains("non-ASCII") == true)
        #expect(capture.requests.isEmpty)
        #expect(!ncmb.capabilities.has(NCMBBackend.unicodeFileNames))
        #expect(ncmb.capabilities.note(for: NCMBBackend.unicodeFileNames)?.contains("E403002") == true)
        _ = try await ncmb.upload(FileUpload(name: "memo-1.txt", source: .data(Data("x".utf8))))
    }

    // MARK: 5. User system fields, _id

    /// [doc] ncmb.md §1.6 user field names; [sdk] ncmb_js 2013-09-01_user_login_namepw_success.json and ncmb_android
    /// valid_get_login_response.json carry mailAddressConfirm on every login.
    @Test("mailAddressConfirm and temporaryPassword are system fields, not User.fields")
    func userSystemFields() throws {
        let object = try NCMBUserObject(json: JSON.parse("""
            {"objectId":"u1","userName":"ann","mailAddressConfirm":null,"temporaryPassword":"x","acl":{"*":{"read":true,"write":true}},"hobby":"go"}
            """))
        #expect(try object.user(roles: []).fields == ["hobby": "go"])
    }

    @Test("a sign-up cannot set a user system field")
    func signUpRefusesSystemFields() async throws {
        let (ncmb, capture, _) = try Self.make()
        let error = await #expect(throws: MBaaSError.self) {
            _ = try await ncmb.signUp(username: "ann", password: "pw-1", email: nil, fields: ["mailAddressConfirm": true])
        }
        #expect(error?.kind == .invalidRequest)
        #expect(capture.requests.isEmpty)
    }

    /// [doc] user-registration page (ncmb.md §1.6): "フィールド名に「_id」は指定不可とします".
    @Test("_id is refused as a field name before sending")
    func underscoreIDRefused() async throws {
        let (ncmb, capture, _) = try Self.make()
        let error = await #expect(throws: MBaaSError.self) { _ = try await ncmb.create(Record(className: "Memo", fields: ["_id": 1])) }
        #expect(error?.kind == .invalidRequest && error?.message.contains("_id") == true)
        #expect(capture.requests.isEmpty)
        #expect(throws: MBaaSError.self) { try NCMBCodec.checkFieldName("_id") }
        try NCMBCodec.checkFieldName("_idx")
    }

    /// [sdk] ncmb_ios NCMBQuery.m and ncmb_android NCMBQuery.java send count=1&limit=1.
    @Test("a count is sent with count=1&limit=1")
    func countSendsLimitOne() async throws {
        let (ncmb, capture, _) = try Self.make()
        _ = try await ncmb.create(Record(className: "Memo", fields: ["a": 1]))
        _ = try await ncmb.create(Record(className: "Memo", fields: ["a": 2]))
        #expect(try await ncmb.count(Query("Memo")) == 2)
        let items = URLComponents(url: capture.requests.last!.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(items.first { $0.name == "limit" }?.value == "1")
        #expect(items.first { $0.name == "count" }?.value == "1")
    }
}
