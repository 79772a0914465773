import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

@testable import MBaaSSalesforceWire

/// The Wire module's messages, routes, datetimes and errors, with vectors from shared/reference/salesforce.md
/// (each test names its source: "capture" = a recorded org response quoted there).
@Suite struct SalesforceWireTests {
    func j(_ text: String) throws -> JSON { try JSON.parse(text) }

    func response(_ status: Int, _ body: String) -> TransportResponse {
        TransportResponse(status: .init(code: status), body: Data(body.utf8))
    }

    // MARK: Datetimes

    /// Source: salesforce.md "Datetimes", capture `2017-03-21T12:11:06.000+0000`.
    @Test func datetimesAreReadAndWrittenExactly() throws {
        let text = "2017-03-21T12:11:06.000+0000"
        let d = try #require(SalesforceDateTime.parse(text))
        #expect(ISO8601.format(d) == "2017-03-21T12:11:06.000Z")
        #expect(SalesforceDateTime.format(d) == text)
        #expect(SalesforceDateTime.isDateTimeString(text))
        let ms = try #require(SalesforceDateTime.parse("2024-01-02T03:04:05.123+0000"))
        #expect(SalesforceDateTime.format(ms) == "2024-01-02T03:04:05.123+0000")
        // Other zones and forms read to the same instant; written back in UTC.
        for other in ["2024-01-02T12:04:05.123+0900", "2024-01-02T12:04:05.123+09:00", "2024-01-02T03:04:05.123Z",
                      "2024-01-01T22:04:05.123-0500"] {
            #expect(SalesforceDateTime.parse(other).map(SalesforceDateTime.format) == "2024-01-02T03:04:05.123+0000", "\(other)")
        }
        #expect(SalesforceDateTime.parse("2024-01-02T03:04:05Z").map(ISO8601.format) == "2024-01-02T03:04:05.000Z")
        for bad in ["2024-01-02", "2024-02-30T00:00:00.000+0000", "2024-01-02T03:04:05.000", "yesterday",
                    "2024-01-02T03:04:05.000+00"] {
            #expect(SalesforceDateTime.parse(bad) == nil, "\(bad)")
        }
        #expect(!SalesforceDateTime.isDateTimeString("2024-01-02T03:04:05.000Z"))
        #expect(SalesforceDateTime.formatDate(ms) == "2024-01-02")
        #expect(SalesforceDateTime.httpDate(ms) == "Tue, 02 Jan 2024 03:04:05 GMT")
        #expect(SalesforceDateTime.parseHTTPDate("Tue, 02 Jan 2024 03:04:05 GMT").map(ISO8601.format) == "2024-01-02T03:04:05.000Z")
        let epoch = try #require(ISO8601.parse("1970-01-01T00:00:00Z"))
        #expect(SalesforceDateTime.httpDate(epoch) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(SalesforceDateTime.parseHTTPDate("2024-01-02") == nil)
    }

    // MARK: Routes

    /// Source: salesforce.md "Query" (capture: `nextRecordsUrl` `/services/data/v53.0/query/01gB000003OCxSPIA1-2000`),
    /// "Where the sources disagree" 3 (trailing slashes), "sObject CRUD".
    @Test func routesParseBothWaysWithAndWithoutTrailingSlash() throws {
        let cases: [(String, SalesforceRoute, String?)] = [
            ("/services/oauth2/token", .token, nil),
            ("/services/oauth2/revoke", .revoke, nil),
            ("/services/oauth2/userinfo", .userinfo, nil),
            ("/services/data/v53.0/sobjects/Account", .sobjects("Account"), "53.0"),
            ("/services/data/v53.0/sobjects/Account/", .sobjects("Account"), "53.0"),
            ("/services/data/v62.0/sobjects/Account/001B000000X1YZaIAN", .sobject("Account", id: "001B000000X1YZaIAN"), "62.0"),
            ("/services/data/v62.0/sobjects/Account/describe/", .describe("Account"), "62.0"),
            ("/services/data/v62.0/sobjects/ContentVersion/068x/VersionData", .blob("ContentVersion", id: "068x", field: "VersionData"), "62.0"),
            ("/services/data/v53.0/query", .query(all: false), "53.0"),
            ("/services/data/v53.0/query/", .query(all: false), "53.0"),
            ("/services/data/v53.0/queryAll", .query(all: true), "53.0"),
            ("/services/data/v53.0/query/01gB000003OCxSPIA1-2000", .queryMore(locator: "01gB000003OCxSPIA1-2000", all: false), "53.0"),
            ("/services/data/v62.0/composite/sobjects", .collections, "62.0"),
            ("/services/data/v62.0/composite/sobjects/Account", .collectionRetrieve("Account"), "62.0"),
        ]
        for (path, route, version) in cases {
            let parsed = try #require(SalesforceRoute.parse(path: path), "\(path)")
            #expect(parsed.route == route, "\(path)")
            #expect(parsed.version == version, "\(path)")
            // The printed path parses back to the same route.
            let printed = route.path(version: version ?? "62.0")
            #expect(SalesforceRoute.parse(path: printed)?.route == route, "\(printed)")
        }
        #expect(SalesforceRoute.sobject("Account", id: "a/b").path(version: "v62.0") == "/services/data/v62.0/sobjects/Account/a%2Fb")
        for bad in ["/services/data/v53.0/sobjects/Account/%2E%2E", "/services/data/vX/query", "/services/data/v53.0/nothing",
                    "/api/query", "/services/oauth2/other", "/services/data/v53.0/sobjects/A/%2Fetc"] {
            #expect(SalesforceRoute.parse(path: bad) == nil, "\(bad)")
        }
    }

    @Test func formBodiesRoundTrip() throws {
        let request = SalesforceTokenRequest(grant: .password(username: "a+b@example.com", password: "p&ss=w rd" + "TOKEN"),
                                             clientId: "cid", clientSecret: "s3cret")
        let form = try #require(SalesforceForm.decode(request.body))
        #expect(form == ["grant_type": "password", "client_id": "cid", "client_secret": "s3cret",
                         "username": "a+b@example.com", "password": "p&ss=w rdTOKEN"])
        #expect(try SalesforceTokenRequest.parse(form: form).get() == request)
        // `+` is a space in a form body; the Mobile SDK's hybrid_refresh is a refresh (sdk).
        let hybrid = try #require(SalesforceForm.decode(Data("grant_type=hybrid_refresh&client_id=c&refresh_token=r+1".utf8)))
        #expect(try SalesforceTokenRequest.parse(form: hybrid).get().grant == .refreshToken("r 1"))
        if case .failure(let e) = SalesforceTokenRequest.parse(form: ["grant_type": "magic", "client_id": "c"]) {
            #expect(e.error == "unsupported_grant_type")
        } else { Issue.record("an unknown grant was accepted") }
        if case .failure(let e) = SalesforceTokenRequest.parse(form: ["grant_type": "password", "username": "u", "password": "p"]) {
            #expect(e == SalesforceOAuthError(error: "invalid_client_id", errorDescription: "client identifier invalid"))
        } else { Issue.record("a grant without client_id was accepted") }
    }

    /// Source: salesforce.md "Authentication" (jsforce's TokenResponse; capture of the OAuth error body).
    @Test func tokenResponsesAndOAuthErrors() async throws {
        let body = try j(#"{"access_token":"00Dxx0000001gPL!AR8AQJXg5oj8jXSgxJfA0lBog.39AsX.LVpxezPwuX5VAIrrbbHMuol7GQxnMeYMN7cj8EoWr78nt1u44zU31IbYNNJguseu","instance_url":"https://yourInstance.my.salesforce.com","id":"https://login.salesforce.com/id/00Dxx0000001gPLEAY/005xx000001SwiUAAS","token_type":"Bearer","issued_at":"1278448101416","signature":"miHQW9dZ6tl6Ab4L7c+1VhqKL2V8mJ7YXHp8xWS4nfI="}"#)
        let token = try SalesforceTokenResponse(json: body)
        #expect(token.instanceURL == "https://yourInstance.my.salesforce.com")
        #expect(token.userId == "005xx000001SwiUAAS" && token.organizationId == "00Dxx0000001gPLEAY")
        #expect(token.refreshToken == nil && token.issuedAt == "1278448101416")
        #expect(try SalesforceTokenResponse(json: token.json) == token)
        let e = await expectError(.decoding) { try SalesforceTokenResponse(json: j(#"{"instance_url":"x"}"#)) }
        #expect(e?.message.contains("access_token") == true)

        let oauth = SalesforceErrorCodec.error(for: response(400, #"{"error":"invalid_grant","error_description":"authentication failure"}"#))
        #expect(oauth.kind == .unauthorized && oauth.vendorCode == "invalid_grant" && oauth.httpStatus == 400)
        #expect(oauth.message == "authentication failure")
        let client = SalesforceErrorCodec.error(for: response(400, #"{"error":"invalid_client_id","error_description":"client identifier invalid"}"#))
        #expect(client.kind == .unauthorized && client.vendorCode == "invalid_client_id")
        // Server direction.
        let back = SalesforceErrorCodec.oauthError(for: MBaaSError(.unauthorized, "wrong password"))
        #expect(back.status == 400 && back.body == SalesforceOAuthError(error: "invalid_grant", errorDescription: "authentication failure"))
        #expect(SalesforceErrorCodec.oauthError(for: client).body.error == "invalid_client_id")
    }

    // MARK: Errors

    /// Source: salesforce.md "REST error shape and codes" and "sObject CRUD" (captures).
    @Test func restErrorArraysMapOntoKindsKeepingTheCode() throws {
        let deleted = SalesforceErrorCodec.error(for: response(404, #"[{"message":"entity is deleted","errorCode":"ENTITY_IS_DELETED","fields":[]}]"#))
        #expect(deleted.kind == .notFound && deleted.vendorCode == "ENTITY_IS_DELETED" && deleted.httpStatus == 404)
        #expect(deleted.message == "entity is deleted")
        let malformedId = SalesforceErrorCodec.error(for: response(400, #"[{"message":"Record ID: id value of incorrect type: 001xx","errorCode":"MALFORMED_ID","fields":["Id"]}]"#))
        #expect(malformedId.kind == .invalidRequest && malformedId.vendorCode == "MALFORMED_ID" && malformedId.refusesRecordId)
        let query = SalesforceErrorCodec.error(for: response(400, #"[{"message":"unexpected token: SELEKT","errorCode":"MALFORMED_QUERY"}]"#))
        #expect(query.kind == .invalidRequest && query.vendorCode == "MALFORMED_QUERY" && query.message == "unexpected token: SELEKT")
        let session = SalesforceErrorCodec.error(for: response(401, #"[{"message":"Session expired or invalid","errorCode":"INVALID_SESSION_ID"}]"#))
        #expect(session.kind == .unauthorized && session.vendorCode == "INVALID_SESSION_ID")
        let limit = SalesforceErrorCodec.error(for: response(403, #"[{"message":"TotalRequests Limit exceeded.","errorCode":"REQUEST_LIMIT_EXCEEDED"}]"#))
        #expect(limit.kind == .rateLimited)
        let dup = SalesforceErrorCodec.error(for: response(400, #"[{"message":"duplicate value found: F duplicates value on record with id: 001","errorCode":"DUPLICATE_VALUE","fields":["F"]}]"#))
        #expect(dup.kind == .duplicate && dup.refusedField == "F")
        let missing = SalesforceErrorCodec.error(for: response(404, #"[{"message":"The requested resource does not exist","errorCode":"NOT_FOUND"}]"#))
        #expect(missing.kind == .notFound && missing.vendorCode == "NOT_FOUND")
        // 412 has no body (capture: "412 (none)"); an HTML body keeps jsforce's ERROR_HTTP_<status>.
        let precondition = SalesforceErrorCodec.error(for: response(412, ""))
        #expect(precondition.kind == .conflict && precondition.vendorCode == "PRECONDITION_FAILED")
        let html = SalesforceErrorCodec.error(for: response(503, "<html>down</html>"))
        #expect(html.kind == .unavailable && html.vendorCode == "ERROR_HTTP_503")
        // Several items: the first decides, the others are named.
        let two = SalesforceErrorCodec.error(for: response(400, #"[{"message":"a","errorCode":"INVALID_FIELD"},{"message":"b","errorCode":"REQUIRED_FIELD_MISSING","fields":["X"]}]"#))
        #expect(two.vendorCode == "INVALID_FIELD" && two.message == "a (and REQUIRED_FIELD_MISSING: b)")
    }

    @Test func serverErrorsAnswerTheRecordedShapes() throws {
        // `fields` absent for INVALID_FIELD and MALFORMED_QUERY, present for DUPLICATE_VALUE (capture).
        let (s1, notFound) = SalesforceErrorCodec.restError(for: MBaaSError(.notFound, "gone"))
        #expect(s1 == 404 && notFound.json() == .object(["message": "gone", "errorCode": "NOT_FOUND"]))
        let (s2, deleted) = SalesforceErrorCodec.restError(for: MBaaSError(.notFound, "entity is deleted", vendorCode: "ENTITY_IS_DELETED"))
        #expect(s2 == 404 && deleted.errorCode == "ENTITY_IS_DELETED")
        let (s3, session) = SalesforceErrorCodec.restError(for: MBaaSError(.unauthorized, "Session expired or invalid"))
        let sessionBody = try j(#"[{"message":"Session expired or invalid","errorCode":"INVALID_SESSION_ID"}]"#)
        #expect(s3 == 401 && SalesforceErrorItem.body([session]) == sessionBody)
        let (s4, dup) = SalesforceErrorCodec.restError(for: MBaaSError(.duplicate, "taken").refusing("Email"))
        #expect(s4 == 400 && dup.fields == ["Email"])
        let (s5, conflict) = SalesforceErrorCodec.restError(for: MBaaSError(.conflict, "changed"))
        #expect(s5 == 412 && conflict.errorCode == "PRECONDITION_FAILED")
        let (s6, query) = SalesforceErrorCodec.restError(for: SOQLParseError(message: "unexpected token: 'SELEKT'", offset: 0, row: 1, column: 1).mbaasError)
        #expect(s6 == 400 && query.errorCode == "MALFORMED_QUERY" && query.fields == nil)
        // A collection item uses statusCode (sdk: Mobile SDK and jsforce live tests).
        let item = SalesforceErrorItem(message: "bad", errorCode: "INVALID_FIELD", fields: [])
        #expect(item.json(inCollection: true) == .object(["message": "bad", "statusCode": "INVALID_FIELD", "fields": []]))
        #expect(SalesforceErrorItem(json: item.json(inCollection: true)) == item)
    }

    // MARK: Messages

    /// Source: salesforce.md "sObject CRUD" (capture: 201 `{"id","success":true,"errors":[]}`), "Composite and
    /// sObject Collections" (sdk: collection items with statusCode, ALL_OR_NONE_OPERATION_ROLLED_BACK).
    @Test func saveResultsAndCollectionResults() async throws {
        let created = try SalesforceSaveResult(json: j(#"{"id":"001B000001LrPvXIAV","success":true,"errors":[]}"#))
        #expect(created == SalesforceSaveResult(id: "001B000001LrPvXIAV", success: true))
        let createdBody = try j(#"{"id":"001B000001LrPvXIAV","success":true,"errors":[]}"#)
        #expect(created.json() == createdBody)
        let results = try SalesforceCollectionRequest.results(j(#"""
            [{"id":"001RM000003oLnnYAE","success":false,"errors":[{"statusCode":"ALL_OR_NONE_OPERATION_ROLLED_BACK","message":"Record rolled back because not all records were valid and the request was using AllOrNone header","fields":[]}]},
             {"success":false,"errors":[{"statusCode":"INVALID_FIELD","message":"No such column 'X__c' on sobject of type Account","fields":[]}]}]
            """#))
        #expect(results.count == 2 && results.allSatisfy { !$0.success })
        #expect(results[0].errors.first?.errorCode == "ALL_OR_NONE_OPERATION_ROLLED_BACK")
        #expect(results[1].id == nil && results[1].errors.first?.errorCode == "INVALID_FIELD")
        let request = SalesforceCollectionRequest(allOrNone: true, records: [["attributes": .object(["type": "Account"]), "Name": "a"]])
        #expect(try SalesforceCollectionRequest(json: request.json) == request)
        let tooMany = SalesforceCollectionRequest(allOrNone: false, records: Array(repeating: ["Name": "x"], count: 201))
        let e = await expectError(.invalidRequest) { try SalesforceCollectionRequest(json: tooMany.json) }
        #expect(e?.vendorCode == "EXCEEDED_ID_LIMIT")
    }

    /// Source: salesforce.md "Query" (capture: page shape, `nextRecordsUrl`, COUNT() with `records: []`).
    @Test func queryPagesAndCounts() throws {
        let page = try SalesforceQueryPage(json: j(#"""
            {"totalSize":2500,"done":false,"nextRecordsUrl":"/services/data/v53.0/query/01gB000003OCxSPIA1-2000",
             "records":[{"attributes":{"type":"Account","url":"/services/data/v53.0/sobjects/Account/001B000000X1YZaIAN"},
                         "Id":"001B000000X1YZaIAN","Name":"Acme","Phone":null,"CreatedDate":"2017-03-21T12:11:06.000+0000",
                         "LastModifiedDate":"2017-03-22T01:02:03.456+0000","OwnerId":"005B0000001abcDIAQ","NumberOfEmployees":50}]}
            """#))
        #expect(page.totalSize == 2500 && !page.done && page.nextRecordsPath == "/services/data/v53.0/query/01gB000003OCxSPIA1-2000")
        let r = try SalesforceRecordCodec.record(page.records[0])
        #expect(r.className == "Account" && r.id == "001B000000X1YZaIAN")
        #expect(r.createdAt.map(ISO8601.format) == "2017-03-21T12:11:06.000Z")
        #expect(r.updatedAt.map(ISO8601.format) == "2017-03-22T01:02:03.456Z")
        #expect(r.version == "2017-03-22T01:02:03.456+0000")
        #expect(r.fields == ["Name": "Acme", "Phone": .null, "NumberOfEmployees": 50], "OwnerId is the org's, not a neutral field")
        // simple-salesforce's tests use an absolute nextRecordsUrl (salesforce.md, disagreement 2).
        let absolute = SalesforceQueryPage(totalSize: 1, done: false, nextRecordsUrl: "https://x.my.salesforce.com/services/data/v53.0/query/01g-2000", records: [])
        #expect(absolute.nextRecordsPath == "/services/data/v53.0/query/01g-2000")
        let count = try SalesforceQueryPage(json: j(#"{"totalSize":42,"done":true,"records":[]}"#))
        #expect(count.totalSize == 42 && count.done && count.records.isEmpty && count.nextRecordsUrl == nil)
        #expect(try SalesforceQueryPage(json: j(#"{"totalSize":42,"done":true,"records":null}"#)).records.isEmpty)
        #expect(try SalesforceQueryPage(json: page.json) == page)
    }

    @Test func recordsBothWays() async throws {
        let when = try #require(SalesforceDateTime.parse("2024-01-02T03:04:05.678+0000"))
        var r = Record(className: "Memo__c", id: "a00B000000X1YZaIAN", createdAt: when, updatedAt: when)
        r.fields = ["Title__c": "it's \"quoted\"", "Due__c": .date(when), "Done__c": true, "Money__c": 1.5]
        let wire = SalesforceRecordCodec.json(r, version: "62.0")
        #expect(wire["attributes"] == .object(["type": "Memo__c", "url": "/services/data/v62.0/sobjects/Memo__c/a00B000000X1YZaIAN"]))
        #expect(wire["Due__c"] == "2024-01-02T03:04:05.678+0000" && wire["SystemModstamp"] == "2024-01-02T03:04:05.678+0000")
        var back = try SalesforceRecordCodec.record(wire)
        #expect(back.version == "2024-01-02T03:04:05.678+0000")
        back.version = nil
        #expect(back == r)
        // Writing: names checked, read-only fields refused, types Salesforce fields do not hold refused.
        let body = try SalesforceRecordCodec.body(["Title__c": "x", "Due__c": .date(when)], type: "Memo__c")
        #expect(body == ["attributes": .object(["type": "Memo__c"]), "Due__c": "2024-01-02T03:04:05.678+0000", "Title__c": "x"])
        let bad = await expectError(.invalidRequest) { try SalesforceRecordCodec.body(["Name) FROM User --": "x"]) }
        #expect(bad?.refusedField == "Name) FROM User --")
        let audit = await expectError(.invalidRequest) { try SalesforceRecordCodec.body(["CreatedDate": .date(when)]) }
        #expect(audit?.vendorCode == "INVALID_FIELD_FOR_INSERT_UPDATE")
        await expectError(.unsupported) { try SalesforceRecordCodec.body(["Tags__c": ["a"]]) }
        // Server direction: an Id in the body is refused as the org does (doc).
        let idInBody = await expectError(.invalidRequest) { try SalesforceRecordCodec.fields(ofBody: ["Id": "001", "Name": "x"]) }
        #expect(idInBody?.vendorCode == "INVALID_FIELD" && idInBody?.message == "The Id field should not be specified in the sobject data.")
        #expect(try SalesforceRecordCodec.fields(ofBody: ["attributes": .object(["type": "A"]), "Name": "x"]) == ["Name": "x"])
    }

    @Test func identifiersAndIds() {
        for ok in ["Name", "Memo__c", "ns__Field__c", "A1"] { #expect(SalesforceWire.isIdentifier(ok), "\(ok)") }
        for bad in ["", "1A", "_x", "Name OR Id", "a.b", "Nam'e", "名前", String(repeating: "a", count: 81)] {
            #expect(!SalesforceWire.isIdentifier(bad), "\(bad)")
        }
        #expect(SalesforceWire.isRecordId("001B000000X1YZa") && SalesforceWire.isRecordId("001B000000X1YZaIAN"))
        #expect(!SalesforceWire.isRecordId("001B000000X1YZ") && !SalesforceWire.isRecordId("001B000000X1YZ'"))
        // Case-safe Ids: each suffix character encodes which of five characters are upper case (doc).
        #expect(SalesforceWire.caseSafeId("ABCDEabcde12345") == "ABCDEabcde123455AA")
        #expect(SalesforceWire.caseSafeId("aBcdeabcdE12345") == "aBcdeabcdE12345CQA")
        #expect(SalesforceWire.caseSafeId("001B000000X1YZaIAN") == "001B000000X1YZaIAN")
    }
}
