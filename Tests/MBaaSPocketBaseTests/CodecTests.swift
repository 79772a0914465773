import Foundation
import MBaaSCore
import Testing
@testable import MBaaSPocketBase

@Suite("PocketBase wire codec")
struct CodecTests {
    @Test func dates() {
        let d = Date(timeIntervalSince1970: 1_711_886_096.789)
        #expect(PocketBaseWire.formatDate(d) == "2024-03-31 11:54:56.789Z")
        #expect(PocketBaseWire.parseDate("2024-03-31 11:54:56.789Z") == d)
        #expect(PocketBaseWire.parseDate("") == nil)
    }

    /// Every neutral value survives the trip through a PocketBase record body, as the server prints it back
    /// (whole doubles lose their fraction on the wire; the type column restores them).
    @Test func valuesRoundTripThroughTheWire() throws {
        let fields: [String: Value] = [
            "s": "it's \\ 日本", "i": 5, "d": 5.0, "f": 0.25, "b": false, "n": .null,
            "t": .date(Date(timeIntervalSince1970: 1_700_000_000.5)), "g": .geoPoint(GeoPoint(latitude: 35, longitude: 139.5)),
            "p": .pointer(Pointer(className: "User", objectId: "u1")), "y": .bytes(Data([0, 255])),
            "a": [1, 2.0, ["x": 3.0, "w": .date(Date(timeIntervalSince1970: 0))]], "o": ["k": 1.0, "a/b~c": [2.0]],
            "e": "", "z": 0,
        ]
        let body = try PocketBaseRecordCodec.body(changes: fields.mapValues { .set($0) }, schema: nil)
        #expect(body["d__type"] == "double")
        #expect(body["n"] == nil)
        #expect(body["n__type"] == "null")
        #expect(body["t"] == "2023-11-14 22:13:20.500Z")
        #expect(body["g"] == .object(["lon": 139.5, "lat": 35.0]))
        // Print as PocketBase would (whole doubles as integers), parse back, decode.
        var wire = JSONObject()
        for (k, v) in body { wire[k] = Self.goPrinted(v) }
        wire["id"] = "r1"
        wire["collectionName"] = "Memo"
        let record = try PocketBaseRecordCodec.record(from: wire, className: "Memo", schema: nil, baseURL: "http://x")
        #expect(record.fields == fields)
        #expect(record.id == "r1")
    }

    /// Go's encoding/json prints 5.0 as 5.
    static func goPrinted(_ json: JSON) -> JSON {
        switch json {
        case .double(let d) where d.rounded() == d && abs(d) < 1e15: .int(Int64(d))
        case .array(let a): .array(a.map(goPrinted))
        case .object(let o): .object(JSONObject(o.map { ($0.key, goPrinted($0.value)) }))
        default: json
        }
    }

    @Test func absentZeroAndForeignFields() throws {
        let wire: JSONObject = [
            "id": "r1", "created": "2024-01-01 00:00:00.000Z", "updated": "2024-01-02 00:00:00.000Z",
            "title": "", "title__type": "", "money": 0, "money__type": "int", "legacy": "old", "count": 3, "flag": false,
            "when": "", "collectionId": "pbc_1", "collectionName": "Memo",
        ]
        let schema = PocketBaseSchema(name: "Memo", isManaged: false,
                                      columns: ["legacy": .text, "count": .number, "flag": .bool, "when": .date], isComplete: true)
        let r = try PocketBaseRecordCodec.record(from: wire, className: "Memo", schema: schema, baseURL: "http://x")
        #expect(r.fields == ["money": 0, "legacy": "old", "count": 3, "flag": false])
        #expect(r.createdAt == PocketBaseWire.parseDate("2024-01-01 00:00:00.000Z"))
        #expect(r.acl == nil)
    }

    @Test func acl() throws {
        let acl = ACL([.everyone: .read, .user("u1"): .readWrite, .user("u2"): .write])
        let columns = try PocketBaseRecordCodec.aclColumns(acl)
        #expect(columns["mbaas_public_read"] == true)
        #expect(columns["mbaas_public_write"] == false)
        #expect(columns["mbaas_readers"] == ["u1"])
        #expect(columns["mbaas_writers"] == ["u1", "u2"])
        #expect(try PocketBaseRecordCodec.acl(from: columns) == acl)
        var derived = columns
        derived["mbaas_acl"] = .null
        #expect(try PocketBaseRecordCodec.acl(from: derived) == acl)
        #expect(try PocketBaseRecordCodec.acl(from: try PocketBaseRecordCodec.aclColumns(nil)) == nil)
        #expect(throws: MBaaSError.self) { try PocketBaseRecordCodec.aclColumns(ACL([.role("Admins"): .read])) }
    }

    @Test func storeRejectsWhatPocketBaseWouldChange() {
        func kind(_ v: Value, _ existing: PocketBaseFieldKind?) -> MBaaSError.Kind? {
            do { _ = try PocketBaseRecordCodec.store(v, field: "f", existing: existing); return nil } catch { return error.kind }
        }
        #expect(kind(.int(Int64.max), nil) == .unsupported)
        #expect(kind([.int(1 << 60)], .json) == .unsupported)
        #expect(kind(.double(.nan), nil) == .invalidRequest)
        #expect(kind("x", .number) == .invalidRequest)
        #expect(kind(5, .text) == .invalidRequest)
        #expect(kind(5, .autodate) == .invalidRequest)
        #expect(kind("x", .json) == nil)
        #expect(kind(.int(PocketBaseRecordCodec.maxSafeInteger), .number) == nil)
    }

    @Test(arguments: ["id", "createdAt", "created", "expand", "collectionName", "mbaas_acl", "x__type", "bad-name", "1st", "é", "acl"])
    func reservedFieldNames(_ name: String) {
        #expect(throws: MBaaSError.self) { try PocketBaseWire.validateFieldName(name) }
    }

    @Test func errorMapping() throws {
        func map(_ status: Int, _ body: String, _ op: PocketBaseWire.Operation = .general, headers: HTTPFields = [:]) -> MBaaSError {
            PocketBaseWire.error(status: status, body: Data(body.utf8), headers: headers, operation: op, now: Date(timeIntervalSince1970: 0))
        }
        let dup = map(400, #"{"data":{"username":{"code":"validation_not_unique","message":"Value must be unique."}},"message":"Failed to create record.","status":400}"#)
        #expect(dup.kind == .duplicate)
        #expect(dup.vendorCode == "validation_not_unique")
        #expect(dup.httpStatus == 400)
        #expect(dup.message.contains("Failed to create record.") && dup.message.contains("username: Value must be unique."))
        let invalid = map(400, #"{"data":{"password":{"code":"validation_min_text_constraint","message":"Must be at least 8 character(s)."}},"message":"Failed to create record.","status":400}"#)
        #expect(invalid.kind == .invalidRequest)
        #expect(invalid.vendorCode == "validation_min_text_constraint")
        #expect(map(400, #"{"data":{},"message":"Failed to authenticate.","status":400}"#, .authWithPassword).kind == .unauthorized)
        #expect(map(401, #"{"data":{},"message":"The request requires valid record authorization token.","status":401}"#).kind == .unauthorized)
        #expect(map(403, #"{"data":{},"message":"Only superusers can perform this action.","status":403}"#).kind == .forbidden)
        let nf = map(404, #"{"data":{},"message":"The requested resource wasn't found.","status":404}"#)
        #expect(nf.kind == .notFound && nf.message == "The requested resource wasn't found.")
        let limited = map(429, #"{"data":{},"message":"Too Many Requests.","status":429}"#, headers: [.retryAfter: "7"])
        #expect(limited.kind == .rateLimited && limited.retryAfter == 7)
        #expect(map(503, "upstream down").kind == .unavailable)
        #expect(map(502, "").message == "PocketBase HTTP 502")
        let batch = map(400, #"{"data":{"requests":{"1":{"code":"batch_request_failed","message":"Batch request failed.","response":{"data":{},"message":"The requested resource wasn't found.","status":404}}}},"message":"Batch transaction failed.","status":400}"#, .batch)
        #expect(batch.kind == .notFound)
        #expect(batch.message.hasPrefix("batch request 1 failed"))
        let vague = map(400, #"{"data":{},"message":"Something went wrong while processing your request.","status":400}"#)
        #expect(vague.kind == .invalidRequest && vague.message.contains("filter"))
    }

    @Test func messagesRoundTrip() throws {
        let list = PocketBaseList(page: 2, perPage: 1, totalItems: -1, totalPages: -1, items: [["id": "a"]])
        #expect(try PocketBaseList(json: list.json) == list)
        let batch = PocketBaseBatchRequest(requests: [.init(method: "POST", url: "/api/collections/x/records", body: ["a": 1]),
                                                      .init(method: "DELETE", url: "/api/collections/x/records/r")])
        #expect(try PocketBaseBatchRequest(json: batch.json) == batch)
        let results = PocketBaseBatchResponse(results: [.init(status: 200, body: .object(["id": "a"])), .init(status: 204, body: .null)])
        #expect(try PocketBaseBatchResponse(json: results.json) == results)
        let err = PocketBaseErrorBody(status: 404, message: "x")
        #expect(PocketBaseErrorBody(json: err.json) == err)
        #expect(throws: MBaaSError.self) { try PocketBaseAuthResponse(json: .object(["token": ""])) }
    }

    @Test func tokenClaims() throws {
        let payload = Data(#"{"collectionId":"_pb_users_auth_","exp":1795721572,"id":"bkgmymuk0vqlhu6","refreshable":true,"type":"auth"}"#.utf8)
            .base64EncodedString().replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        let claims = try #require(PocketBaseTokenClaims(token: "e30." + payload + ".sig"))
        #expect(claims.recordId == "bkgmymuk0vqlhu6")
        #expect(claims.expiresAt == Date(timeIntervalSince1970: 1_795_721_572))
        #expect(claims.refreshable)
        #expect(PocketBaseTokenClaims(token: "<TOKEN_1>") == nil)
    }

    @Test func filePaths() {
        let path = PocketBaseWire.filePath(collection: "Doc", recordId: "r1", filename: "a b.png")
        #expect(path == "/api/files/Doc/r1/a%20b.png")
        #expect(PocketBaseWire.parseFilePath("http://h:1" + path + "?token=x")! == ("Doc", "r1", "a b.png"))
        #expect(PocketBaseWire.parseFilePath("http://h/other") == nil)
    }

    @Test func managedCollectionDefinition() {
        let c = PocketBaseCollection.managed(name: "Memo", usersCollectionId: "_pb_users_auth_", fields: [.number("money")])
        #expect(c.isManaged)
        #expect(c.rule("createRule") == "")
        #expect(c.rule("listRule") == PocketBaseCollection.readRule)
        #expect(c.rule("deleteRule") == PocketBaseCollection.writeRule)
        #expect(c.fields.map(\.name) == ["id", "created", "updated", "mbaas_acl", "mbaas_public_read", "mbaas_public_write",
                                         "mbaas_readers", "mbaas_writers", "money"])
        #expect(c.field(named: "MONEY")?.kind == .number)
    }
}
