import Foundation
import MBaaSCore
import Testing

@testable import MBaaSAppPot

@Suite("AppPot values and rows")
struct ValueCodecTests {
    @Test("string-to-type conversion by column (A7: values come back as strings)")
    func fromStrings() throws {
        func read(_ j: JSON, _ t: AppPotColumnType?) throws -> Value? { try AppPotValueCodec.value(fromWire: j, column: t, field: "f") }
        #expect(try read("42", .long) == .int(42))
        #expect(try read("42.0", .integer) == .int(42))
        #expect(try read(42, .long) == .int(42))
        #expect(try read("1", .bool) == .bool(true))
        #expect(try read("0", .bool) == .bool(false))
        #expect(try read("1.0", .bool) == .bool(true))
        #expect(try read("true", .bool) == .bool(true))
        #expect(try read(1, .bool) == .bool(true))
        #expect(try read("1390085336544", .dateTime) == .date(Date(timeIntervalSince1970: 1_390_085_336.544)))
        #expect(try read("5.5", .double) == .double(5.5))
        #expect(try read("-0.25", .double) == .double(-0.25))
        #expect(try read("hello", .varchar(10)) == .string("hello"))
        #expect(try read(7, .varchar(10)) == .string("7"))
        #expect(try read(#"["a",{"__type":"Date","iso":"2024-01-01T00:00:00.000Z"}]"#, .json(100))
                == .array(["a", .date(ISO8601.parse("2024-01-01T00:00:00.000Z")!)]))
        #expect(try read(.null, .long) == nil)
        #expect(try read("5", nil) == .string("5"), "without a schema a string stays a string")
        for (j, t) in [(JSON.string("abc"), AppPotColumnType.long), ("x", .double), ("maybe", .bool), ("{", .json(9)), ("soon", .dateTime)] {
            let e = try #require(throws: MBaaSError.self) { try read(j, t) }
            #expect(e.kind == .decoding)
        }
    }

    @Test("wire forms by column: bool 1/0, dates epoch ms, doubles as text (JS formatColumns)")
    func toWire() throws {
        func wire(_ v: Value, _ t: AppPotColumnType?, _ g: AppPotGeneration = .v2) throws -> JSON {
            try AppPotValueCodec.wire(v, column: t, field: "f", generation: g)
        }
        #expect(try wire(true, .bool) == 1)
        #expect(try wire(false, .bool) == 0)
        #expect(try wire(.date(Date(timeIntervalSince1970: 1.5)), .dateTime) == 1500)
        #expect(try wire(5.5, .double) == "5.5")
        #expect(try wire(3, .double) == "3", "JS v2.3 formatColumns writes 3 + \"\"")
        #expect(try wire(3, .double, .v3) == 3, "JS v3 formatColumns writes the number")
        #expect(try wire(2.5, .double, .v3) == 2.5)
        #expect(try wire(7, .long) == 7)
        #expect(try wire(7.0, .long) == 7)
        #expect(try wire("x", .varchar(5)) == "x")
        #expect(try wire(.null, .long) == .null)
        #expect(try wire(["b": 1, "a": [true]], .json(100)) == #"{"a":[true],"b":1}"#)
        #expect(try wire(true, nil) == 1)
        #expect(try wire(2.25, nil) == "2.25")
        for (v, t) in [(Value.string("x"), AppPotColumnType.long), (5.5, .long), (.int(Int64(Int32.max) + 1), .integer),
                       ("1", .bool), (1, .varchar(5)), ("2024", .dateTime), (.double(.infinity), .double)] {
            let e = try #require(throws: MBaaSError.self) { try wire(v, t) }
            #expect(e.kind == .invalidRequest)
            #expect(e.message.contains("'f'"))
        }
    }

    @Test("derived column types for dynamic records")
    func derived() {
        let s = AppPotClassSchema.derive(name: "Memo", from: [
            "t": "x", "long": .string(String(repeating: "a", count: 300)), "n": 5, "d": 1.5, "b": true,
            "at": .date(Date()), "none": nil, "list": [1], "geo": .geoPoint(GeoPoint(latitude: 1, longitude: 2)),
        ])
        #expect(s.columns == ["t": .varchar(255), "long": .varchar(4000), "n": .long, "d": .double, "b": .bool,
                              "at": .dateTime, "none": .varchar(255), "list": .json(4000), "geo": .json(4000)])
        let table = s.tableJSON
        #expect(table["primary_key"] == "objectId")
        let cols = table["columns"]!.arrayValue!.map { $0["colName"]!.stringValue! }
        #expect(Array(cols.prefix(4)) == ["objectId", "scopeType", "createTime", "updateTime"])
        #expect(table["columns"]!.arrayValue!.first { $0["colName"] == "b" } == .object(["colName": "b", "type": "varchar", "fieldLength": 1]))
        #expect(table["columns"]!.arrayValue!.first { $0["colName"] == "at" } == .object(["colName": "at", "type": "long"]))
        #expect(table["columns"]!.arrayValue!.first { $0["colName"] == "d" } == .object(["colName": "d", "type": "varchar", "fieldLength": 255]))
    }

    @Test("a read row becomes a record: metadata out of the fields, version = serverUpdateTime")
    func decodeRow() throws {
        // The row of the docs' GET example (A7), plus typed columns.
        let row = try JSON.parse("""
            {"serverCreateTime":"2014-10-28T14:49:12.779+07:00","createUserId":"2","scopeType":"1",
             "serverUpdateTime":"2014-10-28T15:00:00.000+07:00","createTime":"1390085336544","groupIds":"{1}",
             "updateTime":"123546512","name":"Grand1","serverRecordStatus":"1","objectId":"12345",
             "done":"1","due":"1390085336544","rate":"2.5","n":"10","empty":null}
            """).objectValue!
        let schema = AppPotClassSchema(name: "Place", columns: ["name": .varchar(50), "done": .bool, "due": .dateTime,
                                                                "rate": .double, "n": .integer, "empty": .varchar(5)])
        let r = try AppPotRowCodec.decodeRecord(row, className: "Place", schema: schema)
        #expect(r.id == "12345")
        #expect(r.version == "2014-10-28T15:00:00.000+07:00")
        #expect(r.createdAt == ISO8601.parse("2014-10-28T07:49:12.779Z"))
        #expect(r.updatedAt == ISO8601.parse("2014-10-28T08:00:00.000Z"))
        #expect(r.acl == .privateTo("2"))
        #expect(r.fields == ["name": "Grand1", "done": true, "due": .date(Date(timeIntervalSince1970: 1_390_085_336.544)),
                             "rate": 2.5, "n": 10])
    }

    @Test("an encoded row carries scope, client times and the lock token; reserved names are refused")
    func encodeRow() throws {
        let schema = AppPotClassSchema(name: "M", columns: ["title": .varchar(20), "done": .bool])
        let row = try AppPotRowCodec.encodeRow(fields: ["title": "a", "done": true], schema: schema, scope: .group,
                                               objectId: "M_1", createTime: Date(timeIntervalSince1970: 2),
                                               updateTime: Date(timeIntervalSince1970: 3), serverUpdateTime: "v1")
        #expect(JSON.object(row) == (try JSON.parse(#"{"objectId":"M_1","done":1,"title":"a","scopeType":2,"createTime":2000,"updateTime":3000,"serverUpdateTime":"v1"}"#)))
        for bad in ["id", "acl", "objectId", "groupIds", "serverUpdateTime", "bad name", "1x"] {
            let e = try #require(throws: MBaaSError.self) {
                try AppPotRowCodec.encodeRow(fields: [bad: 1], schema: nil, scope: .all, objectId: nil, createTime: nil,
                                             updateTime: nil, serverUpdateTime: nil)
            }
            #expect(e.kind == .invalidRequest, "\(bad)")
        }
    }
}

@Suite("AppPot scopes")
struct ScopeTests {
    @Test("ACL to scopeType: public 3, owner-only 1, the owner's groups 2 (wire values)")
    func toScope() throws {
        #expect(try AppPotScope.from(acl: nil, userId: "20", groupIds: ["12"]) == .group, "every AppPot SDK defaults to Group")
        #expect(try AppPotScope.from(acl: nil, userId: "20", groupIds: ["12"], default: .all) == .all)
        #expect(try AppPotScope.from(acl: .publicReadWrite, userId: "20", groupIds: []) == .all)
        #expect(try AppPotScope.from(acl: .privateTo("20"), userId: "20", groupIds: ["12"]) == .user)
        #expect(try AppPotScope.from(acl: ACL([.group("12"): .readWrite]), userId: "20", groupIds: ["12"]) == .group)
        #expect(try AppPotScope.from(acl: ACL([.group("12"): .readWrite, .group("13"): .readWrite, .user("20"): .readWrite]),
                                     userId: "20", groupIds: ["13", "12"]) == .group)
        #expect(AppPotScope.user.rawValue == 1 && AppPotScope.group.rawValue == 2 && AppPotScope.all.rawValue == 3)
    }

    @Test("ACLs that no scope expresses are unsupported, with the reason")
    func unsupportedACLs() throws {
        let cases: [(ACL, String)] = [
            (.privateTo("21"), "per-user grants"),
            (ACL([.user("20"): .readWrite, .user("21"): .read]), "read and write together"),
            (.publicRead(owner: "20"), "read and write together"),
            (ACL([.role("Admin"): .readWrite]), "roles"),
            (ACL([.group("12"): .readWrite]), "all of the writer's groups"),
            (ACL(), "nobody"),
        ]
        for (acl, why) in cases {
            let e = try #require(throws: MBaaSError.self) { try AppPotScope.from(acl: acl, userId: "20", groupIds: ["12", "13"]) }
            #expect(e.kind == .unsupported)
            #expect(e.message.contains(why), "\(e.message)")
        }
        let e = try #require(throws: MBaaSError.self) { try AppPotScope.from(acl: .privateTo("20"), userId: nil, groupIds: []) }
        #expect(e.message.contains("logged-in"))
    }

    @Test("scopeType to ACL and groupIds parsing")
    func toACL() {
        #expect(AppPotScope(wire: "3") == .all)
        #expect(AppPotScope(wire: 1) == .user)
        #expect(AppPotScope(wire: "9") == nil)
        #expect(AppPotScope.groupIds(fromWire: "{1,2}") == ["1", "2"])
        #expect(AppPotScope.groupIds(fromWire: "{}") == [])
        #expect(AppPotScope.groupIds(fromWire: [3, "4"]) == ["3", "4"])
        #expect(AppPotScope.groupIds(fromWire: " [ \"7\" , 8 ,, ] ") == ["7", "8"])
        #expect(AppPotScope.groupIds(fromWire: "{グループ,2}") == ["グループ", "2"])
        #expect(AppPotScope.groupIdsWire(["1", "2"]) == "{1,2}")
        #expect(AppPotScope.all.acl(createUserId: "2", groupIds: []) == .publicReadWrite)
        #expect(AppPotScope.user.acl(createUserId: "2", groupIds: []) == .privateTo("2"))
        #expect(AppPotScope.group.acl(createUserId: "2", groupIds: ["1", "5"]) == ACL([.group("1"): .readWrite, .group("5"): .readWrite]))
    }
}

@Suite("AppPot login parsing")
struct AuthCodecTests {
    @Test("authInfor (the server's spelling) with flat group/role entries")
    func authInfor() throws {
        // The v1 login sample (A5), with the SDKs' firstName.
        let json = try JSON.parse("""
            {"status":"OK","description":null,
             "authInfor":{"userTokens":"8560ba5e81af4279a0c3bfd3d1f6827b","validTime":18000000,"userId":20,
               "userInfo":{"account":"admin@stew.com","firstName":"ryohei","lastName":"sogo"},
               "groupsAndRoles":[{"groupId":12,"groupName":"Sales","roleName":"User","roleId":4},
                                 {"groupId":13,"groupName":"Ops","roleName":"Manager"}]}}
            """)
        let info = try AppPotAuthInfo(loginResponse: json)
        #expect(info.userToken == "8560ba5e81af4279a0c3bfd3d1f6827b")
        #expect(info.validTime == 18_000_000)
        #expect(info.userId == "20")
        #expect(info.account == "admin@stew.com")
        #expect(info.groupIds == ["12", "13"])
        #expect(info.roleNames == ["User", "Manager"])
        #expect(info.groupsAndRoles[0].roleId == 4)
        let user = info.user
        #expect(user.id == "20" && user.username == "admin@stew.com")
        #expect(user.groups == ["12", "13"] && user.roles == ["User", "Manager"])
        #expect(user.fields["firstName"] == "ryohei")
        #expect(user.fields["groupNames"] == ["12": "Sales", "13": "Ops"])
        #expect(try AppPotAuthInfo(loginResponse: info.loginResponse) == info)
    }

    @Test("authInfo with nested group/role entries, and the v1 fistName typo")
    func authInfoNested() throws {
        let json = try JSON.parse("""
            {"status":"OK","authInfo":{"userTokens":"t","userId":"7","userInfo":{"account":"a","fistName":"F"},
             "groupsAndRoles":[{"group":{"groupId":"3","groupName":"G","description":"d"},"role":{"roleName":"Admin"}},
                               {"group":{"groupId":3},"role":{"roleName":"User"}}]}}
            """)
        let info = try AppPotAuthInfo(loginResponse: json)
        #expect(info.userId == "7" && info.firstName == "F" && info.validTime == nil)
        #expect(info.groupsAndRoles[0] == AppPotGroupRole(groupId: "3", groupName: "G", description: "d", roleName: "Admin"))
        #expect(info.groupIds == ["3"])
        #expect(info.roleNames == ["Admin", "User"])
        #expect(try AppPotGroupRole(json: info.groupsAndRoles[0].nestedJSON) == info.groupsAndRoles[0])
    }

    @Test("login responses without the auth info or token are decoding errors")
    func malformed() throws {
        for text in [#"{"status":"OK"}"#, #"{"authInfor":{"userId":1}}"#, #"{"authInfor":{"userTokens":"t"}}"#,
                     #"{"authInfor":{"userTokens":"t","userId":1,"groupsAndRoles":[{"groupName":"x"}]}}"#] {
            let e = try #require(throws: MBaaSError.self) { try AppPotAuthInfo(loginResponse: try JSON.parse(text)) }
            #expect(e.kind == .decoding)
        }
    }

    @Test("the login body, company id as a number when numeric; isPush as the AngularJS string")
    func loginBody() throws {
        let body = AppPotLoginRequest(username: "u", password: "p", appId: "a", deviceUDID: "d", appVersion: "1.0", companyId: "24")
        #expect(body.json == (try JSON.parse(#"{"username":"u","password":"p","appId":"a","deviceUDID":"d","isPush":false,"appVersion":"1.0","companyId":24}"#)))
        #expect(try AppPotLoginRequest(json: body.json) == body)
        #expect(AppPotLoginRequest.companyJSON("acme") == "acme")
        let angular = try AppPotLoginRequest(json: try JSON.parse(#"{"username":"u","password":"p","appId":"a","deviceUDID":"d","isPush":"false","appVersion":"1","companyId":"7"}"#))
        #expect(angular.isPush == false)
    }

    @Test("GET users/{id}: both group/role shapes")
    func userInfo() throws {
        let nested = try AppPotUserInfo(response: try JSON.parse(#"{"user":{"userId":5,"account":"x","groupRoleMap":[{"group":{"groupId":1},"role":{"roleName":"User"}}]}}"#))
        #expect(nested.userId == "5" && nested.groupsAndRoles?.map(\.groupId) == ["1"])
        let flat = try AppPotUserInfo(response: try JSON.parse(#"{"user":{"id":"6","groupsAndRoles":[{"groupId":2,"roleName":"Admin"}]}}"#))
        #expect(flat.userId == "6" && flat.groupsAndRoles?.first?.roleName == "Admin")
        #expect(try AppPotUserInfo(response: nested.response) == nested)
    }
}

@Suite("AppPot error mapping")
struct ErrorMappingTests {
    static let expected: [Int: MBaaSError.Kind] = [
        101: .invalidRequest, 102: .notFound, 103: .unavailable, 104: .invalidRequest, 105: .invalidRequest,
        106: .invalidRequest, 107: .forbidden, 108: .forbidden, 109: .invalidRequest, 110: .unauthorized,
        111: .unauthorized, 112: .unauthorized, 120: .unauthorized, 121: .unauthorized, 130: .conflict,
        131: .unavailable, 160: .unauthorized, 161: .duplicate, 163: .invalidRequest, 198: .invalidRequest,
        199: .notFound, 201: .unavailable, 210: .unavailable, 211: .duplicate, 212: .unavailable,
        220: .invalidRequest, 993: .notFound, 995: .notFound,
        // File API codes without a documented meaning: the HTTP status decides (here 200, so invalidRequest).
        122: .invalidRequest, 600: .invalidRequest, 601: .invalidRequest, 603: .invalidRequest, 605: .invalidRequest,
    ]

    @Test("every code of the reference table maps to a kind and keeps the vendor code", arguments: expected.keys.sorted())
    func code(_ code: Int) throws {
        #expect(AppPotErrorCode.meaning(of: code) != nil)
        let body = AppPotEnvelope.error(code: code, description: "server says \(code)")
        let response = TransportResponse(status: 200, body: body.data())
        guard case .failure(let e) = AppPotEnvelope.check(response) else {
            Issue.record("errCode \(code) was not an error")
            return
        }
        #expect(e.kind == Self.expected[code])
        #expect(e.vendorCode == String(code))
        #expect(e.httpStatus == 200)
        #expect(e.message.contains("server says \(code)"))
    }

    @Test("the table covers every documented code")
    func complete() {
        #expect(Set(AppPotErrorCode.meanings.keys) == Set(Self.expected.keys))
    }

    @Test("undocumented file codes take the HTTP status's kind")
    func undocumented() throws {
        let response = TransportResponse(status: 404, body: AppPotEnvelope.error(code: 600, description: "x").data())
        guard case .failure(let e) = AppPotEnvelope.check(response) else { Issue.record("not an error"); return }
        #expect(e.kind == .notFound && e.vendorCode == "600" && e.httpStatus == 404)
    }

    @Test("success envelopes, errors without an envelope, and the session-ending codes")
    func envelopes() throws {
        let success = TransportResponse(status: 200, body: AppPotEnvelope.success(results: "tok").data())
        guard case .success(let json) = AppPotEnvelope.check(success) else { Issue.record("not a success"); return }
        #expect(json?["results"] == "tok")
        guard case .failure(let e) = AppPotEnvelope.check(TransportResponse(status: 503, body: Data("busy".utf8))) else {
            Issue.record("not an error"); return
        }
        #expect(e.kind == .unavailable && e.vendorCode == nil && e.message.contains("busy"))
        #expect(AppPotErrorCode.endsSession(120) && AppPotErrorCode.endsSession(121) && !AppPotErrorCode.endsSession(130))
        let env = try #require(AppPotEnvelope(json: try JSON.parse(#"{"status":"error","errCode":"161","description":"already"}"#)))
        #expect(env.errCode == 161 && env.isError)
        #expect(env.error(httpStatus: nil)?.kind == .duplicate)
    }

    @Test("write results: -1 rows fail with the row named")
    func writeResults() throws {
        let results = try AppPotWriteResult.decodeResponse(try JSON.parse("""
            {"errCode":0,"status":"OK","description":null,"results":[{"objectId":"department_1390463076564",
             "serverCreateTime":"2014-01-23T14:44:36.516+07:00","serverUpdateTime":"2014-01-23T14:50:43.035+07:00"},
             {"objectId":-1}]}
            """))
        #expect(results.count == 2)
        #expect(!results[0].isFailure && results[0].serverUpdateTime == "2014-01-23T14:50:43.035+07:00")
        #expect(results[1].isFailure)
        let e = results[1].error(row: 1, className: "department")
        #expect(e.kind == .invalidRequest && e.message.contains("row 1") && e.vendorCode == "-1")
        let coded = AppPotWriteResult(objectId: "-1", errCode: 211).error(row: 0, className: "X")
        #expect(coded.kind == .duplicate && coded.vendorCode == "211")
    }

    @Test("count responses in the shapes the adapter accepts")
    func counts() throws {
        for text in [#"{"results":3}"#, #"{"results":"3"}"#, #"{"results":{"count":3}}"#, #"{"count":3}"#, #"{"__APPPOT_COUNT__":"3"}"#] {
            #expect(try AppPotDataResponse.count(try JSON.parse(text)) == 3, "\(text)")
        }
        #expect(throws: MBaaSError.self) { try AppPotDataResponse.count(try JSON.parse(#"{"results":[]}"#)) }
    }
}
