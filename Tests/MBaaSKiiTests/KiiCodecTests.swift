import Foundation
import MBaaSCore
import Testing

@testable import MBaaSKii
@testable import MBaaSKiiWire

/// Pure codec pieces: URLs, class names, values and records, errors, auth and ACL shapes.
@Suite struct KiiCodecTests {
    func j(_ text: String) throws -> JSON { try JSON.parse(text) }

    // MARK: URL and scopes

    @Test func backendURLsNameTheSiteAndOptions() throws {
        let jp = try KiiConfiguration(url: BackendURL(parsing: "kii://app1:key1@api-jp.kii.com"))
        #expect(jp.baseURL == "https://api-jp.kii.com/api")
        #expect(jp.appID == "app1" && jp.appKey == "key1" && jp.adminCredentials == nil && jp.filesBucket == "mbaas_files")
        #expect(try KiiConfiguration(url: BackendURL(parsing: "kii://app1:k@us")).baseURL == "https://api.kii.com/api")
        #expect(try KiiConfiguration(url: BackendURL(parsing: "kii://app1:k@sg")).baseURL == "https://api-sg.kii.com/api")
        let local = try KiiConfiguration(url: BackendURL(parsing: "kii+http://app1@127.0.0.1:8080/kii/api?filesBucket=blobs"))
        #expect(local.baseURL == "http://127.0.0.1:8080/kii/api")
        #expect(local.appKey == "app1" && local.filesBucket == "blobs")
        let admin = try KiiConfiguration(url: BackendURL(parsing: "kii://app1:s3cret@jp?clientID=cid"))
        #expect(admin.adminCredentials == .init(clientID: "cid", clientSecret: "s3cret"))
        #expect(admin.appKey == "app1", "the client secret is never sent as the app key")
        // ?timeout= gives every request its time; without it the transport's default applies.
        let slow = try KiiConfiguration(url: BackendURL(parsing: "kii://app1:k@jp?timeout=120"))
        #expect(slow.timeout == 120 && local.timeout == nil)
        let bucket = KiiBucketAddress(scope: .app, bucket: "memo")
        #expect(try KiiRequestBuilder(configuration: slow).getObject(bucket, id: "o1").timeout == 120)
        #expect(try KiiRequestBuilder(configuration: local).getObject(bucket, id: "o1").timeout == nil)
        for bad in ["kii://api-jp.kii.com", "kii://a:b@jp?filesBucket=_files", "kii://a:b@jp?colour=red", "kii://a@jp?clientID=x",
                    "ncmb://a:b@jp", "kii://a:b@jp?timeout=0", "kii://a:b@jp?timeout=soon"] {
            #expect(throws: MBaaSError.self, "\(bad)") { try KiiConfiguration(url: BackendURL(parsing: bad)) }
        }
    }

    @Test func classNamesAddressBucketsInScopes() throws {
        let cases: [(String, KiiScope, String, String)] = [
            ("Memo", .app, "Memo", "/apps/a1/buckets/Memo"),
            ("users/me/myBucket", .user("me"), "myBucket", "/apps/a1/users/me/buckets/myBucket"),
            ("users/me/buckets/myBucket", .user("me"), "myBucket", "/apps/a1/users/me/buckets/myBucket"),
            ("users/LOGIN_NAME:alice/b1", .user("LOGIN_NAME:alice"), "b1", "/apps/a1/users/LOGIN_NAME:alice/buckets/b1"),
            ("groups/g9/Board", .group("g9"), "Board", "/apps/a1/groups/g9/buckets/Board"),
            ("things/th1/Log", .thing("th1"), "Log", "/apps/a1/things/th1/buckets/Log"),
            ("CRYPTO:Secret", .app, "CRYPTO:Secret", "/apps/a1/buckets/CRYPTO:Secret"),
        ]
        for (name, scope, bucket, path) in cases {
            let a = try KiiBucketAddress(className: name)
            #expect(a.scope == scope && a.bucket == bucket && a.path(appID: "a1") == path, "\(name)")
        }
        #expect(try KiiBucketAddress(className: "users/u 1/x1").path(appID: "a") == "/apps/a/users/u%201/buckets/x1")
        #expect(try KiiBucketAddress(className: "users/me/buckets/b1").className == "users/me/b1")
        for bad in ["Bad Class!", "_files", "x", "users", "users/me", "people/me/b1", "users//b1", "a/b/c/d/e",
                    String(repeating: "a", count: 65), "users/me/shelf/b1", "users/../Secret", "groups/./Secret",
                    "users/../buckets/Secret"] {
            #expect { try KiiBucketAddress(className: bad) } throws: { ($0 as! MBaaSError).kind == .invalidRequest }
        }
    }

    // MARK: Values and records

    @Test func everyValueTypeRoundTripsThroughKiiJSON() throws {
        let date = try #require(ISO8601.parse("2024-03-31T12:34:56.789Z"))
        let values: [Value] = [
            .null, true, 42, 3.25, "日本語 🎉", .date(date), .bytes(Data([0, 1, 254, 255])), [1, "two", 3.5],
            ["a": 1, "b": ["c": "d"]], .pointer(Pointer(className: "T", objectId: "o1")),
            .file(FileReference(name: "a.txt", contentType: "text/plain", size: 3,
                                attachment: FileAttachment(className: "Doc", objectId: "d1", field: "f"))),
            .geoPoint(GeoPoint(latitude: 35.681236, longitude: 139.767125)),
            [.geoPoint(GeoPoint(latitude: 1, longitude: 2)), ["when": .date(date)]],
        ]
        for v in values {
            #expect(KiiObjectCodec.value(KiiObjectCodec.kiiJSON(v)) == v, "\(v)")
        }
        // GeoPoints take Kii's own shape so geo clauses can use them; other typed values keep the neutral form.
        #expect(KiiObjectCodec.kiiJSON(.geoPoint(GeoPoint(latitude: 35.6, longitude: 139.7)))
                == (try j(#"{"_type":"point","lat":35.6,"lon":139.7}"#)))
        #expect(KiiObjectCodec.kiiJSON(.date(date)) == (try j(#"{"__type":"Date","iso":"2024-03-31T12:34:56.789Z"}"#)))
        // A foreign object that merely has a `__type` key stays a plain object.
        #expect(KiiObjectCodec.value(try j(#"{"__type":"Mystery","x":1}"#)) == .object(["__type": "Mystery", "x": 1]))
    }

    @Test func objectsMapReservedFieldsToRecordMetadata() throws {
        // The documented GET body (kii.md §3.4).
        let o = try #require(try j("""
            {"score":5000,"name":"game1","_created":1337039114613,"_id":"d8dc9f29-0fb9-48be-a80c-ec60fddedb54",
             "_modified":1337040183711,"_owner":"ff43674e","_dataType":"mydata","_version":"3","_calculated":{"d":1.5}}
            """).objectValue)
        let r = KiiObjectCodec.record(className: "Game", object: o)
        #expect(r.id == "d8dc9f29-0fb9-48be-a80c-ec60fddedb54" && r.version == "3")
        #expect(r.createdAt.map(ISO8601.format) == "2012-05-14T23:45:14.613Z")
        #expect(r.updatedAt.map(ISO8601.format) == "2012-05-15T00:03:03.711Z")
        #expect(r.fields == ["score": 5000, "name": "game1"])
        // _version as a number (query results, kii.md §3.4) and the ETag taking precedence.
        var n = o
        n["_version"] = 7
        #expect(KiiObjectCodec.record(className: "G", object: n).version == "7")
        #expect(KiiObjectCodec.record(className: "G", object: n, etag: "8").version == "8")
        #expect(KiiETag.unquote("\"3\"") == "3" && KiiETag.unquote("W/\"4\"") == "4" && KiiETag.unquote("5") == "5")
        // And back, as a server prints it.
        let back = KiiObjectCodec.object(for: r, owner: "ff43674e", dataType: "mydata")
        #expect(back["_id"] == o["_id"] && back["_created"] == o["_created"] && back["score"] == 5000 && back["_version"] == "3")
    }

    @Test func reservedAndUnderscoreFieldNamesAreRefused() throws {
        for name in ["_secret", "id", "createdAt", "acl", ""] {
            #expect { try KiiObjectCodec.body(fields: [name: 1]) } throws: { ($0 as! MBaaSError).kind == .invalidRequest }
        }
        #expect(try KiiObjectCodec.body(fields: ["b": 2, "a": 1]).keys == ["a", "b"])
    }

    @Test func createAndUpdateResponsesParse() throws {
        let created = try KiiObjectCreationResponse(json: j(
            #"{"objectID":"o1","createdAt":1337039114613,"dataType":"application/vnd.app.mydata+json"}"#))
        #expect(created.objectID == "o1" && created.createdAt == 1_337_039_114_613)
        #expect(try KiiObjectCreationResponse(json: created.json) == created)
        let updated = try KiiObjectUpdateResponse(json: j(#"{"createdAt":1,"modifiedAt":3456}"#))
        #expect(updated == KiiObjectUpdateResponse(createdAt: 1, modifiedAt: 3456))
        #expect(throws: MBaaSError.self) { try KiiObjectUpdateResponse(json: j(#"{"createdAt":1}"#)) }
    }

    // MARK: Errors (kii.md §7)

    func error(_ status: Int, _ body: String, contentType: String = "application/json", authenticated: Bool = false) -> MBaaSError {
        KiiErrorCodec.error(for: TransportResponse(status: .init(code: status), headers: [.contentType: contentType], body: Data(body.utf8)),
                            authenticated: authenticated)
    }

    @Test func everyListedErrorCodeMapsToANeutralKind() throws {
        // The errorCode → status table of kii.md §7.2 and the kinds they mean.
        let table: [(String, Int, MBaaSError.Kind)] = [
            ("UNAUTHORIZED", 401, .unauthorized), ("WRONG_TOKEN", 403, .unauthorized), ("WRONG_REFRESH_TOKEN", 403, .unauthorized),
            ("AUTHENTICATION_FAILED", 401, .unauthorized), ("WRONG_PASSWORD", 401, .unauthorized), ("USER_DISABLED", 401, .unauthorized),
            ("APP_NOT_FOUND", 404, .notFound), ("APP_DISABLED", 403, .forbidden), ("USER_NOT_FOUND", 404, .notFound),
            ("USER_ALREADY_EXISTS", 409, .duplicate), ("USER_ADDRESS_NOT_FOUND", 404, .notFound),
            ("INVALID_ACCOUNT_STATUS", 400, .invalidRequest), ("ACCOUNT_TYPE_NOT_SUPPORTED", 400, .invalidRequest),
            ("OAUTH2_ERROR", 400, .invalidRequest), ("INVALID_INPUT_DATA", 400, .invalidRequest), ("INVALID_JSON", 400, .invalidRequest),
            ("INVALID_JSON_SCHEMA", 400, .invalidRequest), ("INVALID_DATA_TYPE", 400, .invalidRequest), ("MISSING_DATA", 400, .invalidRequest),
            ("OPERATION_NOT_ALLOWED", 409, .invalidRequest), ("OPERATION_NOT_SUPPORTED", 403, .forbidden),
            ("UNIQUE_CONSTRAINT_VIOLATED", 409, .duplicate), ("INVALID_STATUS", 409, .invalidRequest),
            ("LOCK_FAILED", 503, .unavailable), ("TEMPORARY_UNAVAILABLE_ERROR", 503, .unavailable),
            ("OPERATION_NOT_IMPLEMENTED", 501, .unsupported), ("PIN_CODE_EXPIRED", 410, .notFound),
            ("OBJECT_NOT_FOUND", 404, .notFound), ("OBJECT_ALREADY_EXISTS", 409, .duplicate),
            ("OBJECT_VERSION_IS_STALE", 409, .conflict), ("OBJECT_CONFLICT", 409, .conflict), ("INVALID_OBJECT_ID", 400, .invalidRequest),
            ("VERSIONED_UPDATES_NOT_SUPPORTED", 400, .invalidRequest), ("OBJECT_BODY_NOT_FOUND", 404, .notFound),
            ("OBJECT_BODY_RANGE_NOT_SATISFIABLE", 416, .invalidRequest), ("OBJECT_BODY_INTEGRITY_NOT_ASSURED", 412, .conflict),
            ("OBJECT_BODY_UPLOAD_NOT_FOUND", 404, .notFound), ("OBJECT_BODY_UPLOAD_ALREADY_EXISTS", 409, .duplicate),
            ("PUBLICATION_NOT_FOUND", 404, .notFound), ("PUBLICATION_EXPIRED", 410, .notFound), ("BUCKET_NOT_FOUND", 404, .notFound),
            ("BUCKET_ALREADY_EXISTS", 409, .duplicate), ("INVALID_BUCKET", 400, .invalidRequest),
            ("BUCKET_TYPE_NOT_SUPPORTED", 400, .invalidRequest), ("QUERY_NOT_SUPPORTED", 400, .unsupported),
            ("QUERY_TIMEOUT", 503, .unavailable), ("ACL_NOT_FOUND", 404, .notFound), ("ACL_ALREADY_EXISTS", 409, .duplicate),
            ("GROUP_NOT_FOUND", 404, .notFound), ("GROUP_ALREADY_EXISTS", 409, .duplicate),
            ("RESOURCE_TEMPORARILY_UNAVAILABLE", 503, .unavailable), ("UNDEFINED_ERROR", 500, .unavailable),
            ("INDEX_FAILED", 500, .unavailable), ("INVALID_VERIFICATION_CODE", 403, .forbidden), ("PASSWORD_TOO_SHORT", 400, .invalidRequest),
            ("invalid_grant", 400, .unauthorized), ("TOO_MANY_REQUESTS", 429, .rateLimited),
        ]
        for (code, status, kind) in table {
            let e = error(status, #"{"errorCode":"\#(code)","message":"m \#(code)"}"#)
            #expect(e.kind == kind && e.vendorCode == code && e.httpStatus == status && e.message == "m \(code)", "\(code): \(e)")
        }
    }

    @Test func errorCodesComeFromTheBodyThenTheContentTypeThenTheStatus() throws {
        let oauth = error(400, #"{"errorCode":"invalid_grant","error_description":"wrong password"}"#)
        #expect(oauth.kind == .unauthorized && oauth.message == "wrong password")
        let fromType = error(404, "", contentType: "application/vnd.kii.ObjectBodyNotFoundException+json")
        #expect(fromType.vendorCode == "OBJECT_BODY_NOT_FOUND" && fromType.kind == .notFound)
        let bare401 = error(401, "{}")
        #expect(bare401.vendorCode == "UNAUTHORIZED" && bare401.kind == .unauthorized)
        let unknown = error(502, "<html>bad gateway</html>", contentType: "text/html")
        #expect(unknown.kind == .unavailable && unknown.vendorCode == nil && unknown.message.contains("bad gateway"))
        // An ACL refusal: unauthorized when anonymous, forbidden for a logged-in user.
        let refusal = #"{"errorCode":"UNAUTHORIZED","message":"no","authenticatedPrincipalID":"u1"}"#
        #expect(error(401, refusal, authenticated: true).kind == .forbidden)
        #expect(error(401, refusal, authenticated: false).kind == .unauthorized)
        let limited = KiiErrorCodec.error(for: TransportResponse(status: 429, headers: [.retryAfter: "7"], body: Data()), authenticated: false)
        #expect(limited.kind == .rateLimited && limited.retryAfter == 7)
        // The server side: body and Content-Type (kii.md §7.1).
        let body = KiiErrorBody(errorCode: "OBJECT_NOT_FOUND", message: "gone", extras: ["objectID": "o1"])
        #expect(body.contentType == "application/vnd.kii.ObjectNotFoundException+json")
        #expect(KiiErrorBody(json: body.json) == body)
        #expect(KiiErrorCodec.exceptionCode(contentType: body.contentType) == "OBJECT_NOT_FOUND")
    }

    /// [doc] kii.md §7.1 (REST reference): `application/vnd.kii.UnauthorizedAccessException+json` carries errorCode
    /// `UNAUTHORIZED`; acronyms stay whole (`ACLAlreadyExistsException` → `ACL_ALREADY_EXISTS`).
    @Test func bodylessErrorsTakeTheReferenceCodeFromTheContentType() {
        #expect(KiiErrorCodec.exceptionCode(contentType: "application/vnd.kii.UnauthorizedAccessException+json") == "UNAUTHORIZED")
        #expect(KiiErrorCodec.exceptionCode(contentType: "application/vnd.kii.ACLAlreadyExistsException+json") == "ACL_ALREADY_EXISTS")
        #expect(KiiErrorCodec.exceptionCode(contentType: "application/vnd.kii.ObjectBodyNotFoundException+json; charset=UTF-8")
                == "OBJECT_BODY_NOT_FOUND")
        let bodyless = KiiErrorCodec.error(
            for: TransportResponse(status: 401, headers: [.contentType: "application/vnd.kii.UnauthorizedAccessException+json"], body: Data()),
            authenticated: true)
        #expect(bodyless.vendorCode == "UNAUTHORIZED" && bodyless.kind == .forbidden)
        #expect(KiiErrorBody(errorCode: "UNAUTHORIZED", message: "no").contentType == "application/vnd.kii.UnauthorizedAccessException+json")
        #expect(KiiErrorBody(errorCode: "ACL_ALREADY_EXISTS", message: "no").contentType == "application/vnd.kii.ACLAlreadyExistsException+json")
    }

    /// [sdk] KiiCloudSDK-JS KiiSDK.js (app-admin login) and python3-kii kii/users.py: the admin token request on
    /// `/api/oauth2/token` is `{client_id, client_secret}` without `grant_type`.
    @Test func adminTokenRequestHasNoGrantType() throws {
        #expect(KiiTokenRequest.clientCredentials(clientID: "c", clientSecret: "s").json == (try j(#"{"client_id":"c","client_secret":"s"}"#)))
        #expect(try KiiTokenRequest(json: j(#"{"grant_type":"client_credentials","client_id":"c","client_secret":"s"}"#))
                == .clientCredentials(clientID: "c", clientSecret: "s"))
    }

    // MARK: Auth and ACL shapes

    @Test func tokenAndRegistrationShapes() throws {
        #expect(KiiTokenRequest.password(username: "u1", password: "p", expiresAt: nil).json == (try j(#"{"username":"u1","password":"p"}"#)))
        #expect(KiiTokenRequest.refresh(refreshToken: "r").json == (try j(#"{"grant_type":"refresh_token","refresh_token":"r"}"#)))
        for r in [KiiTokenRequest.password(username: "a", password: "b", expiresAt: 5), .refresh(refreshToken: "r"),
                  .clientCredentials(clientID: "c", clientSecret: "s")] {
            #expect(try KiiTokenRequest(json: r.json) == r)
        }
        let t = try KiiTokenResponse(json: j(#"{"id":"u1","access_token":"tok","expires_in":3600,"token_type":"bearer"}"#))
        let s = t.session(username: "alice", now: Date(timeIntervalSince1970: 0))
        #expect(s.token == "tok" && s.userId == "u1" && s.expiresAt == Date(timeIntervalSince1970: 3600) && s.refreshToken == nil)
        let reg = KiiRegistrationRequest(loginName: "test004", password: "hogehoge", emailAddress: "t@x.com", custom: ["followers": 5])
        #expect(try KiiRegistrationRequest(json: reg.json) == reg)
        #expect(KiiRegistrationRequest.problem(loginName: "ab", password: "pass") != nil)
        #expect(KiiRegistrationRequest.problem(loginName: "alice", password: "p") != nil)
        #expect(KiiRegistrationRequest.problem(loginName: "alice.b-c_d", password: "pw-1 Secret") == nil)
        let user = try KiiUserRecord(json: j(#"{"userID":"u1","loginName":"alice","emailAddress":"a@x","internalUserID":9,"age":30}"#)).user
        #expect(user.id == "u1" && user.username == "alice" && user.email == "a@x" && user.fields == ["age": 30])
    }

    @Test func aclEntriesMapBothWays() throws {
        // The documented list shape (kii.md §6.1).
        let list = try KiiACLList(json: j("""
            {"READ_EXISTING_OBJECT":[{"userID":"ANONYMOUS_USER"},{"userID":"user1234"}],
             "WRITE_EXISTING_OBJECT":[{"groupID":"group5678"},{"userID":"ANY_AUTHENTICATED_USER"}],"SOMETHING_NEW":[{"userID":"x"}]}
            """))
        #expect(list.entries.count == 4)
        let acl = KiiACLMapping.acl(fromObjectACL: list)
        #expect(acl[.everyone] == .read && acl[.user("user1234")] == .read && acl[.group("group5678")] == .write)
        #expect(acl[.user("ANY_AUTHENTICATED_USER")] == .write)
        #expect(try KiiACLMapping.objectEntries(for: acl) == list.entries, "the mapping is lossless for Kii's subjects")
        #expect(try KiiACLList(json: list.json) == list)
        #expect(KiiACLEntry(.readExistingObject, .user("id1234")).pathSuffix == "/acl/READ_EXISTING_OBJECT/UserID:id1234")
        #expect(KiiACLSubject(pathComponent: "UserID:ANONYMOUS_USER") == .anonymousUser)
        #expect(KiiACLSubject(pathComponent: "ThingID:t1") == .thing("t1") && KiiACLSubject(pathComponent: "Who:x") == nil)
        #expect { try KiiACLMapping.objectEntries(for: ACL([.role("Admins"): .read])) } throws: { ($0 as! MBaaSError).kind == .unsupported }
        let changes = KiiACLMapping.changes(from: list.entries, to: try KiiACLMapping.objectEntries(for: .privateTo("u9")),
                                            verbs: KiiACLVerb.objectVerbs)
        #expect(changes.grants == [KiiACLEntry(.readExistingObject, .user("u9")), KiiACLEntry(.writeExistingObject, .user("u9"))])
        #expect(changes.revokes.count == 4)
        // Buckets: read = query + read objects, write = create.
        let bucket = try KiiACLMapping.bucketEntries(for: ACL([.everyone: .read, .user("u1"): .readWrite]))
        #expect(bucket.count == 5)
        #expect(KiiACLMapping.acl(fromBucketACL: KiiACLList(bucket)) == ACL([.everyone: .read, .user("u1"): .readWrite]))
    }

    @Test func bodyURLsLeadBackToTheirObject() throws {
        let config = KiiConfiguration(appID: "a1", baseURL: "https://api-jp.kii.com/api")
        let builder = KiiRequestBuilder(configuration: config)
        for name in ["mbaas_files", "users/me/Photos", "groups/g1/Docs"] {
            let bucket = try KiiBucketAddress(className: name)
            let url = builder.bodyURL(bucket, id: "o-1")
            #expect(KiiBodyLocation(url: url, configuration: config) == KiiBodyLocation(bucket: bucket, objectID: "o-1"), "\(url)")
        }
        #expect(KiiBodyLocation(url: "https://elsewhere/x/body", configuration: config) == nil)
        #expect(KiiBodyLocation(url: "https://api-jp.kii.com/api/apps/a1/buckets/b1/objects/o1", configuration: config) == nil)
    }

    @Test func requestsCarryTheDocumentedHeaders() throws {
        let b = KiiRequestBuilder(configuration: KiiConfiguration(appID: "a1", appKey: "k1", baseURL: "https://api-jp.kii.com/api"))
        let bucket = try KiiBucketAddress(className: "Memo")
        let create = try b.createObject(bucket, body: ["a": 1])
        #expect(create.method == .post && create.url.absoluteString == "https://api-jp.kii.com/api/apps/a1/buckets/Memo/objects")
        #expect(create.headers["Content-Type"] == "application/vnd.a1.mydata+json")
        #expect(create.headers["X-Kii-AppID"] == "a1" && create.headers["X-Kii-AppKey"] == "k1" && create.headers["Authorization"] == nil)
        let patch = b.authorize(try b.patchObject(bucket, id: "o1", changes: ["a": 2], ifMatch: "3"), token: "tok")
        #expect(patch.method == .post && patch.headers["X-HTTP-Method-Override"] == "PATCH" && patch.headers["If-Match"] == "3")
        #expect(patch.headers["Authorization"] == "Bearer tok")
        let put = try b.putObject(bucket, id: "o1", body: [:], createOnly: true)
        #expect(put.method == .put && put.headers["If-None-Match"] == "*" && put.headers["If-Match"] == nil)
        let token = try b.token(.password(username: "u", password: "p", expiresAt: nil))
        #expect(token.url.absoluteString == "https://api-jp.kii.com/api/oauth2/token")
        #expect(token.headers["Content-Type"] == "application/vnd.kii.OauthTokenRequest+json")
        let body = try b.putBody(bucket, id: "o1", data: Data("x".utf8), contentType: "text/plain")
        #expect(body.url.path == "/api/apps/a1/buckets/Memo/objects/o1/body" && body.headers["Content-Type"] == "text/plain")
        let grant = try b.grant(resource: bucket.objectPath(appID: "a1", objectID: "o1"), KiiACLEntry(.writeExistingObject, .group("g1")))
        #expect(grant.method == .put && grant.url.path == "/api/apps/a1/buckets/Memo/objects/o1/acl/WRITE_EXISTING_OBJECT/GroupID:g1")
    }
}
