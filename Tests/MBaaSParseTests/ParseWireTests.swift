import Foundation
import MBaaSCore
import MBaaSParse
import Testing

// Vectors: each names its source. "REST guide" is https://docs.parseplatform.org/rest/guide/ (the pages
// parse-community/docs _includes/rest/*.md); "parse.md (T)" is a parse-server spec fact recorded in
// /work/shared/reference/parse.md.

func json(_ text: String) -> JSON { try! JSON.parse(text) }
func date(_ iso: String) -> Date { ISO8601.parse(iso)! }

@Suite("Parse wire: routes, values, updates")
struct ParseWireCodecTests {
    @Test("routes both ways under a mount point")
    func routes() {
        let cases: [(ParseRoute, String)] = [
            (.objects("GameScore"), "/parse/classes/GameScore"),
            (.object("GameScore", id: "Ed1nuqPvcm"), "/parse/classes/GameScore/Ed1nuqPvcm"),
            (.objects("_User"), "/parse/users"),
            (.object("_User", id: "g7y9tkhB7O"), "/parse/users/g7y9tkhB7O"),
            (.me, "/parse/users/me"),
            (.login, "/parse/login"),
            (.logout, "/parse/logout"),
            (.requestPasswordReset, "/parse/requestPasswordReset"),
            (.batch, "/parse/batch"),
            (.file("hello.txt"), "/parse/files/hello.txt"),
            (.objects("_Role"), "/parse/roles"),
            (.object("_Role", id: "mrmBZvsErB"), "/parse/roles/mrmBZvsErB"),
            (.objects("_Session"), "/parse/sessions"),
        ]
        for (route, path) in cases {
            #expect(route.fullPath() == path)
            #expect(ParseRoute(path: path) == route)
        }
        #expect(ParseRoute(path: "/parse/classes/_User") == .objects("_User"))
        #expect(ParseRoute(path: "/1/classes/A/b", mount: "/1") == .object("A", id: "b"))
        #expect(ParseRoute(path: "/other/classes/A") == nil)
        #expect(ParseRoute(path: "/parse/nothing") == nil)
        #expect(ParseRoute.file("a b.txt").path == "/files/a%20b.txt")
        #expect(ParseRoute(path: "/parse/files/a%20b.txt") == .file("a b.txt"))
    }

    @Test("typed values round-trip: Date, Pointer, Relation, File, GeoPoint, Bytes, Polygon")
    func typedValues() throws {
        // REST guide, Objects > Data Types: the Date, Pointer and Relation hashes.
        let dateJSON = json(#"{"__type":"Date","iso":"2022-01-01T12:23:45.678Z"}"#)
        #expect(try ParseCodec.decode(dateJSON) == .date(date("2022-01-01T12:23:45.678Z")))
        #expect(try ParseCodec.encode(.date(date("2022-01-01T12:23:45.678Z"))) == dateJSON)
        let pointerJSON = json(#"{"__type":"Pointer","className":"GameScore","objectId":"Ed1nuqPvc"}"#)
        #expect(try ParseCodec.decode(pointerJSON) == .pointer(Pointer(className: "GameScore", objectId: "Ed1nuqPvc")))
        #expect(try ParseCodec.encode(.pointer(Pointer(className: "GameScore", objectId: "Ed1nuqPvc"))) == pointerJSON)
        let relation = try ParseCodec.decode(json(#"{"__type":"Relation","className":"GameScore"}"#))
        #expect(relation == .object(["__type": "Relation", "className": "GameScore"]))
        #expect(throws: MBaaSError.self) { try ParseCodec.encode(relation) }
        // REST guide, Files > Associating with Objects: a File hash with name and url.
        let fileJSON = json(#"{"__type":"File","name":"...profile.png","url":"...profile.png"}"#)
        #expect(try ParseCodec.decode(fileJSON) == .file(FileReference(name: "...profile.png", url: "...profile.png")))
        #expect(try ParseCodec.encode(.file(FileReference(name: "...profile.png", url: "...profile.png"))).semanticallyEquals(fileJSON))
        // Parse-Swift Tests/ParseSwiftTests/ParseBytesTests.swift (testDebugString): ParseBytes(base64: "ZnJveW8=").
        let bytesJSON = json(#"{"__type":"Bytes","base64":"ZnJveW8="}"#)
        #expect(try ParseCodec.decode(bytesJSON) == .bytes(Data("froyo".utf8)))
        #expect(try ParseCodec.encode(.bytes(Data("froyo".utf8))) == bytesJSON)
        // REST guide, GeoPoints: {"__type":"GeoPoint","latitude":40.0,"longitude":-30.0}.
        let geoJSON = json(#"{"__type":"GeoPoint","latitude":40.0,"longitude":-30.0}"#)
        #expect(try ParseCodec.decode(geoJSON) == .geoPoint(GeoPoint(latitude: 40, longitude: -30)))
        #expect(try ParseCodec.encode(.geoPoint(GeoPoint(latitude: 40, longitude: -30))).semanticallyEquals(geoJSON))
        let polygonJSON = json(#"{"__type":"Polygon","coordinates":[[0,0],[0,1],[1,1]]}"#)
        #expect(try ParseCodec.encode(try ParseCodec.decode(polygonJSON)) == polygonJSON)
        // Round trips of every neutral value Parse stores.
        let values: [Value] = [.bool(true), .int(42), .double(1.5), .string("x"), .array([.int(1), "a"]),
                               .object(["a": .int(1), "b": .array([.date(date("2024-03-31T00:00:00.000Z"))])]),
                               .bytes(Data([0, 1, 2, 255])), .geoPoint(GeoPoint(latitude: 35.6, longitude: 139.7)),
                               .pointer(Pointer(className: "_User", objectId: "u1")),
                               .file(FileReference(name: "abc_hello.txt", url: "http://h/parse/files/app/abc_hello.txt"))]
        for v in values { #expect(try ParseCodec.decode(ParseCodec.encode(v)) == v) }
        #expect(throws: MBaaSError.self) { try ParseCodec.encode(.int(1 << 60)) }
    }

    @Test("REST guide objects: create body and response, retrieve, update bodies")
    func objectMessages() throws {
        // REST guide, Objects > Creating Objects.
        let record = Record(className: "GameScore", fields: ["score": 1337, "playerName": "Sean Plott", "cheatMode": false])
        #expect(JSON.object(try ParseCodec.createBody(record)).semanticallyEquals(json(#"{"score":1337,"playerName":"Sean Plott","cheatMode":false}"#)))
        let created = try ParseCreated(json: json(#"{"createdAt":"2022-01-01T12:23:45.678Z","objectId":"Ed1nuqPvcm"}"#))
        #expect(created.objectId == "Ed1nuqPvcm")
        #expect(created.createdAt == date("2022-01-01T12:23:45.678Z"))
        #expect(created.json.semanticallyEquals(json(#"{"createdAt":"2022-01-01T12:23:45.678Z","objectId":"Ed1nuqPvcm"}"#)))
        // REST guide, Objects > Retrieving Objects.
        let got = try ParseCodec.decodeRecord(className: "GameScore", json(#"{"score":1337,"playerName":"Sean Plott","cheatMode":false,"skills":["pwnage","flying"],"createdAt":"2022-01-01T12:23:45.678Z","updatedAt":"2022-01-01T12:23:45.678Z","objectId":"Ed1nuqPvcm"}"#).objectValue!)
        #expect(got.id == "Ed1nuqPvcm")
        #expect(got.createdAt == date("2022-01-01T12:23:45.678Z"))
        #expect(got.fields == ["score": 1337, "playerName": "Sean Plott", "cheatMode": false, "skills": ["pwnage", "flying"]])
        #expect(JSON.object(try ParseCodec.encodeRecord(got)).semanticallyEquals(json(#"{"score":1337,"playerName":"Sean Plott","cheatMode":false,"skills":["pwnage","flying"],"createdAt":"2022-01-01T12:23:45.678Z","updatedAt":"2022-01-01T12:23:45.678Z","objectId":"Ed1nuqPvcm"}"#)))
        // REST guide, Objects > Updating Objects / Counters / Arrays / Relations / Deleting Objects.
        let vectors: [(RecordUpdate, String)] = [
            (RecordUpdate(changes: ["score": .set(73453)]), #"{"score":73453}"#),
            (RecordUpdate(changes: ["score": .increment(1)]), #"{"score":{"__op":"Increment","amount":1}}"#),
            (RecordUpdate(changes: ["score": .increment(-1)]), #"{"score":{"__op":"Increment","amount":-1}}"#),
            (RecordUpdate(changes: ["skills": .addUnique(["flying", "kungfu"])]), #"{"skills":{"__op":"AddUnique","objects":["flying","kungfu"]}}"#),
            (RecordUpdate(changes: ["skills": .add(["flying", "kungfu"])]), #"{"skills":{"__op":"Add","objects":["flying","kungfu"]}}"#),
            (RecordUpdate(changes: ["skills": .remove(["flying", "kungfu"])]), #"{"skills":{"__op":"Remove","objects":["flying","kungfu"]}}"#),
            (RecordUpdate(changes: ["opponents": .delete]), #"{"opponents":{"__op":"Delete"}}"#),
        ]
        for (update, text) in vectors {
            let body = try ParseCodec.updateBody(update)
            #expect(JSON.object(body).semanticallyEquals(json(text)), "\(text)")
            // Server direction: the body reads back into the same operations.
            for (key, member) in body {
                #expect(try ParseFieldChange(json: member).fieldOperation() == update.changes[key])
            }
        }
        let add = ParseFieldChange.addRelation([Pointer(className: "Player", objectId: "Vx4nudeWn")])
        #expect(add.json == json(#"{"__op":"AddRelation","objects":[{"__type":"Pointer","className":"Player","objectId":"Vx4nudeWn"}]}"#))
        #expect(try ParseFieldChange(json: add.json) == add)
        let remove = ParseFieldChange.removeRelation([Pointer(className: "Player", objectId: "Vx4nudeWn")])
        #expect(remove.json == json(#"{"__op":"RemoveRelation","objects":[{"__type":"Pointer","className":"Player","objectId":"Vx4nudeWn"}]}"#))
        // REST guide, Objects > Updating Objects: the answer is {"updatedAt":…}.
        #expect(try ParseUpdated(json: json(#"{"updatedAt":"2022-01-01T12:23:45.678Z"}"#)).updatedAt == date("2022-01-01T12:23:45.678Z"))
        // Reserved names and nulls are refused.
        #expect(throws: MBaaSError.self) { try ParseCodec.createBody(Record(className: "A", fields: ["objectId": "x"])) }
        #expect(throws: MBaaSError.self) { try ParseCodec.createBody(Record(className: "A", fields: ["n": .null])) }
    }

    @Test("ACL with role keys both ways; group principals are unsupported")
    func acl() throws {
        // Composed in the shape of the REST guide's ACLs (Roles > Security: "*", user ids, "role:Name" keys; the
        // ids and role name are the guide's examples), not a verbatim vector.
        let text = #"{"*":{"read":true},"8TOXdXf3tz":{"read":true,"write":true},"role:Moderators":{"write":true}}"#
        let acl = try ParseCodec.decodeACL(json(text))
        #expect(acl[.role("Moderators")] == .write)
        #expect(acl[.everyone] == .read)
        #expect(try ParseCodec.encode(acl).semanticallyEquals(json(text)))
        let record = Record(className: "A", acl: acl, fields: ["a": 1])
        #expect(try ParseCodec.createBody(record)["ACL"]?.semanticallyEquals(json(text)) == true)
        let error = #expect(throws: MBaaSError.self) { try ParseCodec.encode(ACL([.group("g"): .read])) }
        #expect(error?.kind == .unsupported)
    }
}

@Suite("Parse wire: errors and batches")
struct ParseWireErrorTests {
    @Test("error bodies map to MBaaSError and back")
    func errors() {
        func mapped(_ status: Int, _ body: String, onLogin: Bool = false) -> MBaaSError {
            ParseErrorBody.error(from: TransportResponse(status: .init(code: status), body: Data(body.utf8)), now: Date(), onLogin: onLogin)
        }
        // parse.md (T): bad credentials on /login answer 404 {"code":101,"error":"Invalid username/password."}.
        let login = mapped(404, #"{"code":101,"error":"Invalid username/password."}"#, onLogin: true)
        #expect(login.kind == .unauthorized && login.vendorCode == "101" && login.httpStatus == 404)
        #expect(login.message == "Invalid username/password.")
        // REST guide, Objects > Batch Operations: {"code":101,"error":"object not found for delete"}.
        #expect(mapped(404, #"{"code":101,"error":"object not found for delete"}"#).kind == .notFound)
        // parse.md (T), Users and sessions / Error codes.
        let table: [(Int, String, MBaaSError.Kind)] = [
            (400, #"{"code":137,"error":"A duplicate value for a field with unique values was provided"}"#, .duplicate),
            (400, #"{"code":202,"error":"Account already exists for this username."}"#, .duplicate),
            (400, #"{"code":203,"error":"Account already exists for this email address."}"#, .duplicate),
            (400, #"{"code":209,"error":"Invalid session token"}"#, .unauthorized),
            (400, #"{"code":119,"error":"This user is not allowed to access non-existent class: X"}"#, .forbidden),
            (400, #"{"code":155,"error":"Request limit exceeded"}"#, .rateLimited),
            (429, #"{"code":100,"error":"Too many requests"}"#, .rateLimited),
            (400, #"{"code":111,"error":"schema mismatch for C.f; expected String but got Number"}"#, .invalidRequest),
            (400, #"{"code":102,"error":"Invalid parameter for query: x"}"#, .invalidRequest),
            (400, #"{"code":141,"error":"Invalid function: \"name\""}"#, .invalidRequest),
            (500, #"{"code":1,"message":"Internal server error."}"#, .unavailable),
            (403, #"{"error":"unauthorized"}"#, .forbidden),
            (403, #"{"error":"unauthorized: master key is required"}"#, .forbidden),
        ]
        for (status, body, kind) in table {
            let e = mapped(status, body)
            #expect(e.kind == kind, "\(body)")
            if let code = json(body)["code"]?.intValue { #expect(e.vendorCode == String(code)) }
        }
        // Server direction: the body of an MBaaSError, and its status.
        #expect(ParseErrorBody(MBaaSError(.notFound, "Object not found.")).json == json(#"{"code":101,"error":"Object not found."}"#))
        #expect(ParseErrorBody(MBaaSError(.notFound, "Object not found.")).response().status == 404)
        #expect(ParseErrorBody(MBaaSError(.duplicate, "taken", vendorCode: "202")).code == 202)
        #expect(ParseErrorBody(MBaaSError(.unauthorized, "Invalid session token")).code == 209)
        #expect(ParseErrorBody(MBaaSError(.internal, "boom")).response().status == 500)
    }

    @Test("batch messages (REST guide) and chunking")
    func batch() throws {
        // REST guide, Objects > Batch Operations: two creates, then an update and a delete.
        let request = ParseBatchRequest(requests: [
            .init(method: "POST", path: "/parse/classes/GameScore", body: ["score": 1337, "playerName": "Sean Plott"]),
            .init(method: "POST", path: "/parse/classes/GameScore", body: ["score": 1338, "playerName": "ZeroCool"]),
        ])
        let text = #"{"requests":[{"method":"POST","path":"/parse/classes/GameScore","body":{"score":1337,"playerName":"Sean Plott"}},{"method":"POST","path":"/parse/classes/GameScore","body":{"score":1338,"playerName":"ZeroCool"}}]}"#
        #expect(request.json.semanticallyEquals(json(text)))
        #expect(try ParseBatchRequest(json: json(text)) == request)
        let second = try ParseBatchRequest(json: json(#"{"requests":[{"method":"PUT","path":"/parse/classes/GameScore/Ed1nuqPvcm","body":{"score":999999}},{"method":"DELETE","path":"/parse/classes/GameScore/Cpl9lrueY5"}]}"#))
        #expect(second.requests.map(\.method) == ["PUT", "DELETE"])
        #expect(second.requests[1].body == nil)
        let answer = try ParseBatchResponse(json: json(#"[{"success":{"createdAt":"2022-01-01T12:23:45.678Z","objectId":"YAfSAWwXbL"}},{"error":{"code":101,"error":"object not found for delete"}}]"#))
        #expect(answer.items.count == 2)
        #expect(answer.items[1] == .error(ParseErrorBody(code: 101, error: "object not found for delete")))
        #expect(try ParseBatchResponse(json: answer.json) == answer)
        // Chunking: 20 by default, at most 50.
        #expect(try ParseWire.chunks(Array(0..<45)).map(\.count) == [20, 20, 5])
        #expect(try ParseWire.chunks(Array(0..<100), size: 50).map(\.count) == [50, 50])
        #expect(try ParseWire.chunks([Int]()).isEmpty)
        #expect(throws: MBaaSError.self) { try ParseWire.chunks([1], size: 51) }
    }

    @Test("wire profile names the X-Parse headers")
    func profile() {
        let p = WireProfile.parse
        for h in ["X-Parse-Application-Id", "X-Parse-REST-API-Key", "x-parse-master-key", "X-Parse-Session-Token"] {
            #expect(p.isSecretHeader(h))
        }
        for h in ["X-Parse-Request-Id", "X-Parse-Client-Version", "X-Parse-Installation-Id"] { #expect(p.isVolatileHeader(h)) }
        #expect(p.isSecretHeader("Authorization"))
    }
}

@Suite("Parse wire: queries")
struct ParseWireQueryTests {
    func whereText(_ p: QueryPredicate) throws -> JSON { .object(try ParseQueryTranslator.where(p)) }

    @Test("REST guide query vectors decode to the neutral AST and encode back exactly")
    func guideVectors() throws {
        // REST guide, Queries > Basic Queries / Query Constraints / Arrays / Compound Queries; Objects > Data Types.
        let vectors: [(String, QueryPredicate)] = [
            (#"{"playerName":"Sean Plott","cheatMode":false}"#,
             .and([.compare("playerName", .eq, "Sean Plott"), .compare("cheatMode", .eq, false)])),
            (#"{"score":{"$gte":1000,"$lte":3000}}"#, .and([.compare("score", .gte, 1000), .compare("score", .lte, 3000)])),
            (#"{"score":{"$in":[1,3,5,7,9]}}"#, .in("score", [1, 3, 5, 7, 9])),
            (#"{"playerName":{"$nin":["Jonathan Walsh","Dario Wunsch","Shawn Simon"]}}"#,
             .notIn("playerName", ["Jonathan Walsh", "Dario Wunsch", "Shawn Simon"])),
            (#"{"score":{"$exists":true}}"#, .exists("score", true)),
            (#"{"score":{"$exists":false}}"#, .exists("score", false)),
            (#"{"arrayKey":{"$all":[2,3,4]}}"#, .containsAll("arrayKey", [2, 3, 4])),
            (#"{"$or":[{"wins":{"$gt":150}},{"wins":{"$lt":5}}]}"#,
             .or([.compare("wins", .gt, 150), .compare("wins", .lt, 5)])),
            (#"{"createdAt":{"$gte":{"__type":"Date","iso":"2022-01-01T12:23:45.678Z"}}}"#,
             .compare("createdAt", .gte, .date(date("2022-01-01T12:23:45.678Z")))),
        ]
        for (text, predicate) in vectors {
            let w = json(text).objectValue!
            #expect(try ParseQueryTranslator.predicate(w) == predicate, "\(text)")
            #expect(try whereText(predicate) == json(text), "\(text)")
        }
    }

    @Test("neutral → Parse → neutral is the identity for every operator")
    func roundTrips() throws {
        let predicates: [QueryPredicate] = [
            .compare("id", .eq, "abc"),
            .compare("n", .ne, 1), .compare("n", .lt, 1), .compare("n", .lte, 1.5), .compare("n", .gt, -1),
            .compare("owner", .eq, .pointer(Pointer(className: "_User", objectId: "u1"))),
            .in("tags", ["a", "b"]), .notIn("tags", ["c"]), .exists("x", false), .containsAll("tags", ["a"]),
            .prefix("title", "a.b*c"), .prefix("title", #"odd\Eend"#), .regex("title", "^a.*z$", options: "i"),
            .regex("title", "x", options: ""),
            .and([.compare("a", .eq, 1), .compare("b", .gt, 2)]),
            .and([.compare("a", .gt, 1), .compare("a", .gt, 5)]),  // repeated operator: $and
            .and([.compare("a", .eq, 1), .compare("a", .ne, 5)]),  // equality and another: $and
            .and([.or([.compare("a", .eq, 1), .compare("b", .eq, 2)]), .or([.compare("c", .eq, 3), .compare("d", .eq, 4)])]),
            .or([.compare("a", .eq, 1), .and([.compare("b", .eq, 2), .compare("c", .lt, 3)])]),
            .not(.or([.compare("a", .eq, 1), .compare("b", .eq, 2)])),
            .not(.compare("a", .eq, 1)),
            .and([.compare("a.b", .eq, 1), .not(.exists("c", true))]),
        ]
        for p in predicates {
            let w = try ParseQueryTranslator.where(p)
            #expect(try ParseQueryTranslator.predicate(w) == p, "\(JSON.object(w).printed())")
        }
        #expect(try whereText(.prefix("t", "a.b")) == json(#"{"t":{"$regex":"^\\Qa.b\\E"}}"#))
        #expect(try whereText(.not(.or([.compare("a", .eq, 1), .compare("b", .eq, 2)]))) == json(#"{"$nor":[{"a":1},{"b":2}]}"#))
        #expect(try whereText(.and([.compare("a", .gt, 1), .compare("a", .gt, 5)])) == json(#"{"$and":[{"a":{"$gt":1}},{"a":{"$gt":5}}]}"#))
    }

    @Test("operators without a neutral form are refused with a clear error")
    func refusals() {
        for text in [#"{"post":{"$inQuery":{"where":{"image":{"$exists":true}},"className":"Post"}}}"#,
                     #"{"$relatedTo":{"object":{"__type":"Pointer","className":"Post","objectId":"8TOXdXf3tz"},"key":"likes"}}"#,
                     #"{"location":{"$nearSphere":{"__type":"GeoPoint","latitude":30.0,"longitude":-20.0}}}"#,
                     #"{"hometown":{"$select":{"query":{"className":"Team","where":{"winPct":{"$gt":0.5}}},"key":"city"}}}"#,
                     #"{"title":{"$text":{"$search":{"$term":"x"}}}}"#] {
            let e = #expect(throws: MBaaSError.self) { try ParseQueryTranslator.predicate(json(text).objectValue!) }
            #expect(e?.kind == .unsupported, "\(text)")
            #expect(e?.message.contains("$") == true)
        }
    }

    @Test("query parameters: order, limit, skip, keys, count; keyset and offset paging")
    func parameters() throws {
        // REST guide, Queries > Query Constraints: order=score,-name; limit=200&skip=400; keys=score,playerName.
        let q = Query("GameScore").sorted("score", "-name").limit(200).skip(400).select(["score", "playerName"])
        let (parse, paging) = try ParseQueryTranslator.translate(q)
        #expect(parse.order == ["score", "-name", "objectId"])
        #expect(parse.limit == 200 && parse.skip == 400 && parse.keys == ["score", "playerName"])
        #expect(paging == .offset(start: 400))
        let items = Dictionary(uniqueKeysWithValues: parse.queryItems)
        #expect(items["order"] == "score,-name,objectId" && items["keys"] == "score,playerName")
        #expect(ParseQueryTranslator.nextCursor(paging: paging, limit: 200, count: 200, lastId: "z") == "skip:600")
        #expect(ParseQueryTranslator.nextCursor(paging: paging, limit: 200, count: 10, lastId: "z") == nil)
        // Server direction.
        let back = try ParseQueryTranslator.query(try ParseQuery(queryItems: parse.queryItems), className: "GameScore")
        #expect(back.sort == [SortKey("score"), SortKey("name", ascending: false), SortKey("id")])
        #expect(back.limit == 200 && back.skip == 400 && back.keys == ["score", "playerName"])
        // Parse-Swift's JSON-encoded forms (parse.md, Transport): keys=["a"], order=["-score"], count=true.
        let swift = try ParseQuery(queryItems: [("keys", #"["a"]"#), ("order", #"["-score"]"#), ("count", "true"), ("limit", "1")])
        #expect(swift.keys == ["a"] && swift.order == ["-score"] && swift.count && swift.limit == 1)
        #expect(throws: MBaaSError.self) { try ParseQuery(queryItems: [("bogus", "1")]) }
        // Keyset: no sort orders by objectId and continues after the last id.
        let (first, keyset) = try ParseQueryTranslator.translate(Query("A", predicate: .compare("n", .gt, 1), limit: 2))
        #expect(first.order == ["objectId"] && keyset == .keyset(ascending: true))
        #expect(ParseQueryTranslator.nextCursor(paging: keyset, limit: 2, count: 2, lastId: "b") == "after:b")
        let (next, _) = try ParseQueryTranslator.translate(Query("A", predicate: .compare("n", .gt, 1), limit: 2, cursor: "after:b"))
        #expect(JSON.object(next.where_!) == json(#"{"n":{"$gt":1},"objectId":{"$gt":"b"}}"#))
        let (desc, _) = try ParseQueryTranslator.translate(Query("A", sort: [SortKey("id", ascending: false)], cursor: "after:m"))
        #expect(desc.order == ["-objectId"] && JSON.object(desc.where_!) == json(#"{"objectId":{"$lt":"m"}}"#))
        // REST guide, Queries > Counting Objects: where=…&count=1&limit=0 answers {"results":[],"count":1337}.
        let count = try ParseQueryTranslator.countQuery(Query("GameScore", predicate: .compare("playerName", .eq, "Jonathan Walsh"), limit: 5))
        #expect(count.queryItems.map(\.0) == ["where", "limit", "count"])
        #expect(count.limit == 0 && count.count)
        #expect(try ParseResults(json: json(#"{"results":[],"count":1337}"#)).count == 1337)
    }
}
