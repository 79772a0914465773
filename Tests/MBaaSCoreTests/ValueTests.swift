import Foundation
import Testing
@testable import MBaaSCore

@Suite("Values and neutral JSON")
struct ValueTests {
    static let date = ISO8601.parse("2024-03-31T23:59:59.123Z")!

    static let samples: [(String, Value)] = [
        ("null", .null), ("bool", .bool(true)), ("int", .int(-42)), ("double", .double(3.5)),
        ("whole double", .double(2)), ("string", .string("日本語 😀 \"quoted\"")), ("date", .date(date)),
        ("bytes", .bytes(Data([0, 1, 2, 255]))), ("array", [1, "two", 3.0, nil]),
        ("object", .object(["a": 1, "nested": .object(["b": .date(date)])])),
        ("pointer", .pointer(Pointer(className: "User", objectId: "abc123"))),
        ("file", .file(FileReference(name: "写真.png", url: "https://x/y", contentType: "image/png", size: 12,
                                      attachment: FileAttachment(className: "Memo", objectId: "m1", field: "photo")))),
        ("geoPoint", .geoPoint(GeoPoint(latitude: 35.681, longitude: 139.767))),
    ]

    @Test(arguments: samples)
    func neutralJSONRoundTripIsLossless(name: String, value: Value) throws {
        let text = value.json.printed()
        let back = try Value(json: JSON.parse(text))
        #expect(back == value, "\(name) did not round-trip: \(text)")
    }

    @Test func typedFormsAreTheDocumentedShapes() {
        #expect(Value.date(Self.date).json.printed() == #"{"__type":"Date","iso":"2024-03-31T23:59:59.123Z"}"#)
        #expect(Value.bytes(Data("hi".utf8)).json.printed() == #"{"__type":"Bytes","base64":"aGk="}"#)
        #expect(Value.pointer(Pointer(className: "C", objectId: "i")).json.printed()
                == #"{"__type":"Pointer","className":"C","objectId":"i"}"#)
        #expect(Value.geoPoint(GeoPoint(latitude: 1, longitude: 2)).json.printed()
                == #"{"__type":"GeoPoint","latitude":1.0,"longitude":2.0}"#)
        #expect(Value.file(FileReference(name: "a.txt")).json.printed() == #"{"__type":"File","name":"a.txt"}"#)
    }

    @Test(arguments: [
        (#"{"__type":"Date"}"#, "needs a string 'iso'"),
        (#"{"__type":"Date","iso":"yesterday"}"#, "is not an ISO-8601 date"),
        (#"{"__type":"Bytes","base64":"!!"}"#, "not valid base64"),
        (#"{"__type":"Pointer","className":"C"}"#, "needs a string 'objectId'"),
        (#"{"__type":"GeoPoint","latitude":91,"longitude":0}"#, "out of range"),
        (#"{"__type":"GeoPoint","latitude":"1","longitude":0}"#, "needs a number 'latitude'"),
        (#"{"__type":"Wat"}"#, "unknown __type"),
        (#"{"a":[{"__type":"Wat"}]}"#, "$.a[0]: unknown __type"),
        (#"{"a":{"__type":5}}"#, "$.a: unknown __type 5"),
    ])
    func malformedTypedValuesNameTheProblem(text: String, message: String) throws {
        let json = try JSON.parse(text)
        #expect {
            try Value(json: json)
        } throws: { error in
            guard let e = error as? MBaaSError else { return false }
            return e.kind == .invalidRequest && e.message.contains(message)
        }
    }

    @Test func isoDatesFormatAndParse() throws {
        let d = try #require(ISO8601.parse("1969-12-31T23:59:59.999Z"))
        #expect(ISO8601.format(d) == "1969-12-31T23:59:59.999Z")
        #expect(ISO8601.format(try #require(ISO8601.parse("2024-02-29T12:00:00+09:00"))) == "2024-02-29T03:00:00.000Z")
        #expect(ISO8601.format(try #require(ISO8601.parse("2013-12-02 02:44:35.452Z"))) == "2013-12-02T02:44:35.452Z")
        #expect(ISO8601.parse("2024-13-01T00:00:00Z") == nil)
        #expect(ISO8601.parse("2024-01-01T00:00:00") == nil)
        #expect(ISO8601.parse("2024-01-01T00:00:00.Z") == nil)
        #expect(ISO8601.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
    }

    @Test func looseEqualityComparesNumbersByValue() {
        #expect(Value.int(2).looselyEquals(.double(2)))
        #expect(!Value.int(2).looselyEquals(.string("2")))
        #expect(Value.array([1, 2]).looselyEquals(.array([1.0, 2.0])))
    }

    @Test func codableUsesTheNeutralForm() throws {
        let data = try JSONEncoder().encode(Value.date(Self.date))
        #expect(try JSON.parse(data) == Value.date(Self.date).json)
        #expect(try JSONDecoder().decode(Value.self, from: data) == .date(Self.date))
    }

    /// The walk vendors share: their hook decides what a `__type` means; structure and error paths are the core's.
    @Test func vendorHooksShareTheWalk() throws {
        let json = try JSON.parse(#"{"keep":{"__type":"Odd","x":1},"n":{"__type":"Num","v":"2"},"list":[{"__type":"Num","v":"x"}]}"#)
        func hook(_ type: JSON?, _ o: JSONObject, _ member: Value.MemberDecoder) throws(Value.ConversionError) -> Value? {
            guard type == "Num" else { return nil }  // unknown types stay plain objects
            guard let v = o["v"]?.stringValue, let n = Int64(v) else { throw Value.ConversionError(message: "bad Num") }
            return .int(n)
        }
        let partial = try JSON.parse(#"{"keep":{"__type":"Odd","x":[1,{"__type":"Num","v":"3"}]},"n":{"__type":"Num","v":"2"}}"#)
        #expect(try Value.walk(partial, typed: hook)
                == .object(["keep": .object(["__type": "Odd", "x": .array([1, 3])]), "n": 2]))
        #expect(throws: Value.ConversionError.self) { try Value.walk(json, typed: hook) }
        do { _ = try Value.walk(json, typed: hook) } catch {
            #expect(error.path == ".list[0]" && error.message == "bad Num")
        }
    }
}

@Suite("Records, ACL and models")
struct RecordTests {
    @Test func recordNeutralJSONRoundTrip() throws {
        let record = Record(
            className: "Memo", id: "m1", createdAt: ValueTests.date, updatedAt: ValueTests.date, version: "3",
            acl: ACL([.everyone: .read, .user("u1"): .readWrite, .role("Admins"): .write]),
            fields: ["title": "rent", "money": 50, "due": .date(ValueTests.date)])
        let json = record.json
        #expect(json["class"] == "Memo")
        #expect(json["createdAt"] == "2024-03-31T23:59:59.123Z")
        #expect(json["acl"]?.printed() == #"{"*":{"read":true},"role:Admins":{"write":true},"u1":{"read":true,"write":true}}"#)
        #expect(try Record(json: JSON.parse(json.printed())) == record)
    }

    @Test(arguments: [
        ("[]", "must be a JSON object"), (#"{"fields":{}}"#, "record.class"),
        (#"{"class":"A","createdAt":"x"}"#, "record.createdAt"), (#"{"class":"A","fields":[]}"#, "record.fields"),
        (#"{"class":"A","acl":{"*":{"read":1}}}"#, "acl.*.read must be a boolean"),
        (#"{"class":"A","acl":{"*":{"delete":true}}}"#, "unknown permission 'delete'"),
    ])
    func malformedRecordsNameTheMember(text: String, message: String) throws {
        let json = try JSON.parse(text)
        #expect { try Record(json: json) } throws: { ($0 as? MBaaSError)?.message.contains(message) == true }
    }

    @Test func cliFieldsRejectReservedNames() {
        #expect(throws: MBaaSError.self) { try Record.fields(fromJSONText: #"{"id":"x"}"#) }
        #expect(throws: MBaaSError.self) { try Record.fields(fromJSONText: "[1]") }
        #expect((try? Record.fields(fromJSONText: #"{"a":1}"#)) == ["a": 1])
    }

    @Test func aclChecksPrincipals() {
        let acl = ACL([.user("alice"): .readWrite, .role("staff"): .read, .group("g1"): .write])
        #expect(acl.canRead(user: "alice"))
        #expect(!acl.canRead(user: "bob"))
        #expect(acl.canRead(user: "bob", roles: ["staff"]))
        #expect(!acl.canWrite(user: "bob", roles: ["staff"]))
        #expect(acl.canWrite(user: nil, groups: ["g1"]))
        #expect(ACL.publicReadWrite.canWrite(user: nil))
        #expect(!ACL.privateTo("alice").canRead(user: nil))
    }

    struct Memo: Model, Equatable {
        static let className = "Memo"
        var id: String?
        var createdAt: Date?
        var title: String
        var money: Int
        var ratio: Double
        var due: Date?
        var blob: Data
        var owner: Pointer
        var place: GeoPoint
        var tags: [String]
    }

    @Test func typedModelsRoundTripThroughRecords() throws {
        let memo = Memo(id: nil, createdAt: nil, title: "家賃", money: 50, ratio: 0.5, due: ValueTests.date,
                        blob: Data([9, 8]), owner: Pointer(className: "User", objectId: "u1"),
                        place: GeoPoint(latitude: 1, longitude: 2), tags: ["a"])
        let record = try memo.record()
        #expect(record.className == "Memo")
        #expect(record.id == nil)
        #expect(record.fields["due"] == .date(ValueTests.date))
        #expect(record.fields["blob"] == .bytes(Data([9, 8])))
        #expect(record.fields["owner"] == .pointer(Pointer(className: "User", objectId: "u1")))
        #expect(record.fields["place"] == .geoPoint(GeoPoint(latitude: 1, longitude: 2)))
        #expect(record.fields["createdAt"] == nil)
        var stored = record
        stored.id = "m1"
        stored.createdAt = ValueTests.date
        let back = try Memo(record: stored)
        #expect(back.id == "m1")
        #expect(back.createdAt == ValueTests.date)
        #expect(back.title == memo.title && back.blob == memo.blob && back.place == memo.place && back.due == memo.due)
    }

    @Test func decodingAModelNamesTheMissingField() {
        let record = Record(className: "Memo", id: "x", fields: ["title": "a"])
        #expect {
            try Memo(record: record)
        } throws: { error in
            guard let e = error as? MBaaSError else { return false }
            return e.kind == .decoding && e.message.contains("missing field")
        }
    }

    // MARK: Direct text <-> Value (no intermediate JSON tree)

    @Test(arguments: ValueTests.samples)
    func directPrintingAndParsingMatchTheJSONPath(name: String, value: Value) throws {
        #expect(value.jsonText == value.json.printed(), "\(name)")
        #expect(try Value.parse(jsonText: value.jsonText) == value, "\(name)")
        let wrapped: Value = .object(["v": value, "list": [value, value]])
        #expect(wrapped.jsonText == wrapped.json.printed(), "\(name)")
        #expect(try Value.parse(jsonText: wrapped.jsonText) == (try Value(json: JSON.parse(wrapped.jsonText))))
    }

    @Test func directParsingNamesThePathOfBadTypedForms() throws {
        #expect {
            try Value.parse(jsonText: #"{"a":[1,{"__type":"Date","iso":"2024-02-30T00:00:00.000Z"}]}"#, path: "fields")
        } throws: { error in
            guard let e = error as? MBaaSError else { return false }
            return e.kind == .invalidRequest && e.message.hasPrefix("fields.a[1]: ") && e.message.contains("2024-02-30")
        }
        #expect {
            try Value.parse(jsonText: #"{"a":{"b":1e999}}"#)
        } throws: { error in
            (error as? JSONParseError)?.path == "$.a.b"
        }
    }

    @Test("dates read in place (the store's exact form) equal dates read through the JSON tree; near misses take the general path")
    func directParsingOfStoredDates() throws {
        let texts = [
            #"{"__type":"Date","iso":"2024-03-31T23:59:59.123Z"}"#,           // the stored form: read in place
            #"{"__type":"Date","iso":"2024-03-31T23:59:59+09:00"}"#,
            #"{ "__type":"Date","iso":"2024-03-31T23:59:59.123Z"}"#,          // spaces: the general path
            #"{"__type": "Date", "iso": "2024-03-31T23:59:59.123Z"}"#,
            #"{"iso":"2024-03-31T23:59:59.123Z","__type":"Date"}"#,           // members in another order
            #"[{"__type":"Date","iso":"1970-01-01T00:00:00.000Z"},{"__type":"Date","iso":"9999-12-31T23:59:59.999Z"}]"#,
            #"{"d":{"__type":"Date","iso":"2024-02-29T12:00:00.000Z"},"n":1}"#,
        ]
        for text in texts {
            #expect(try Value.parse(jsonText: text) == (try Value(json: JSON.parse(text))), "\(text)")
        }
        #expect(try Value.parse(jsonText: texts[0]) == .date(try #require(ISO8601.parse("2024-03-31T23:59:59.123Z"))))
        // Not dates, or wrong ones: the same answers as before the shortcut.
        for bad in [#"{"__type":"Date","iso":"2024-02-30T00:00:00.000Z"}"#, #"{"__type":"Date","iso":"x"}"#,
                    #"{"__type":"Date","iso":"2024-03-31T23:59:59.123Z","extra":1}"#, #"{"__type":"Date","iso":"2024-03-31T23:59:59\u002e123Z"}"#] {
            let direct = Result { try Value.parse(jsonText: bad) }, tree = Result { try Value(json: JSON.parse(bad)) }
            switch (direct, tree) {
            case (.success(let a), .success(let b)): #expect(a == b, "\(bad)")
            case (.failure(let a as MBaaSError), .failure(let b as MBaaSError)): #expect(a.kind == b.kind, "\(bad): \(a) / \(b)")
            default: Issue.record("\(bad): direct \(direct), tree \(tree)")
            }
        }
    }

    @Test func directParsingRefusesARepeatedMemberName() throws {
        for (text, path) in [
            (#"{"a":{"b":1,"c":2,"b":3}}"#, "$.a.b"),
            (#"{"d":{"__type":"Date","iso":"2024-01-01T00:00:00.000Z","iso":"2025-01-01T00:00:00.000Z"}}"#, "$.d.iso"),
            (#"{"d":{"__type":"Date","__type":"Date"}}"#, "$.d.__type"),
        ] {
            #expect {
                try Value.parse(jsonText: text)
            } throws: { error in
                guard let e = error as? JSONParseError else { return false }
                return e.path == path && e.message == "the member name is repeated in this object"
            }
        }
    }

    // MARK: Dates are real calendar instants (issue 11)

    @Test(arguments: [
        "2024-02-30T00:00:00.000Z", "2023-02-29T00:00:00.000Z", "2024-04-31T00:00:00Z", "2024-13-01T00:00:00Z",
        "2024-00-10T00:00:00Z", "2024-01-00T00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T23:60:00Z",
        "2024-12-31T23:59:60Z", "2024-01-01T00:00:00+24:00", "2024-01-01T00:00:00+09:60",
    ])
    func refusesDatesThatWouldRollOver(text: String) throws {
        #expect(ISO8601.parse(text) == nil, "\(text)")
        #expect {
            try Value(json: .object(["__type": "Date", "iso": .string(text)]), path: "due")
        } throws: { error in
            guard let e = error as? MBaaSError else { return false }
            return e.kind == .invalidRequest && e.message.hasPrefix("due: ")
        }
    }

    @Test func acceptsRealEdgeDays() throws {
        for text in ["2024-02-29T00:00:00.000Z", "2000-02-29T00:00:00.000Z", "2023-04-30T23:59:59.999Z", "0001-01-01T00:00:00.000Z",
                     "9999-12-31T23:59:59.999Z"] {
            #expect(ISO8601.format(try #require(ISO8601.parse(text))) == text)
        }
        #expect(ISO8601.parse("1900-02-29T00:00:00Z") == nil)
    }

    // MARK: Models encode and decode without JSON text

    struct Nested: Codable, Equatable {
        var label: String
        var when: [Date]
        var extra: [String: Int]
    }

    struct Rich: Model, Equatable {
        static let className = "Rich"
        var id: String?
        var updatedAt: Date?
        var version: String?
        var acl: ACL?
        var small: Int8
        var big: UInt32
        var ratio: Float
        var maybe: String?
        var nested: Nested
        var list: [Nested]
        var json: JSON
        var value: Value
        var url: URL
        var file: FileReference?
    }

    @Test func modelsMapPropertiesToValuesDirectly() throws {
        let nested = Nested(label: "n", when: [ValueTests.date], extra: ["a": 1])
        let rich = Rich(id: "r1", updatedAt: ValueTests.date, version: "3", acl: .privateTo("alice"), small: -3, big: 4_000_000_000,
                        ratio: 0.1, maybe: nil, nested: nested, list: [nested, nested], json: .object(["k": [1, 2.5]]),
                        value: .pointer(Pointer(className: "User", objectId: "u")), url: URL(string: "https://x.test/a?b=c")!,
                        file: FileReference(name: "a.png", size: 3))
        let record = try rich.record()
        #expect(record.id == "r1" && record.version == "3" && record.updatedAt == ValueTests.date)
        #expect(record.acl == .privateTo("alice"))
        #expect(record.fields["small"] == .int(-3))
        #expect(record.fields["big"] == .int(4_000_000_000))
        #expect(record.fields["ratio"] == .double(0.1))
        #expect(record.fields["maybe"] == nil)   // nil optionals are not written
        #expect(record.fields["nested"] == .object(["label": "n", "when": [.date(ValueTests.date)], "extra": ["a": 1]]))
        #expect(record.fields["json"] == .object(["k": [1, 2.5]]))
        #expect(record.fields["value"] == .pointer(Pointer(className: "User", objectId: "u")))
        #expect(record.fields["url"] == .string("https://x.test/a?b=c"))
        #expect(record.fields["file"] == .file(FileReference(name: "a.png", size: 3)))
        for key in Record.reservedFieldNames { #expect(record.fields[key] == nil) }
        let back = try Rich(record: record)
        #expect(back == Rich(id: "r1", updatedAt: ValueTests.date, version: "3", acl: .privateTo("alice"), small: -3, big: 4_000_000_000,
                             ratio: 0.1, maybe: nil, nested: nested, list: [nested, nested], json: .object(["k": [1, 2.5]]),
                             value: .pointer(Pointer(className: "User", objectId: "u")), url: URL(string: "https://x.test/a?b=c")!,
                             file: FileReference(name: "a.png", size: 3)))
    }

    @Test func modelDatesKeepMillisecondPrecisionLikeTheNeutralForm() throws {
        struct Stamp: Model { static let className = "S"; var id: String?; var at: Date }
        let precise = Date(timeIntervalSince1970: 1_700_000_000.123456)
        let record = try Stamp(id: nil, at: precise).record()
        #expect(record.fields["at"] == .date(try #require(ISO8601.parse("2023-11-14T22:13:20.123Z"))))
    }

    @Test func modelDecodingErrorsNameTheField() throws {
        var record = try Rich(id: nil, updatedAt: nil, version: nil, acl: nil, small: 1, big: 2, ratio: 1, maybe: "m",
                              nested: Nested(label: "x", when: [], extra: [:]), list: [], json: nil, value: nil,
                              url: URL(string: "https://a")!, file: nil).record()
        record.fields["small"] = .int(300)
        #expect {
            try Rich(record: record)
        } throws: { error in
            guard let e = error as? MBaaSError else { return false }
            return e.kind == .decoding && e.message.contains("small") && e.message.contains("Int8")
        }
        record.fields["small"] = 1
        record.fields["list"] = [.object(["label": 5, "when": [], "extra": [:]])]
        #expect {
            try Rich(record: record)
        } throws: { error in
            guard let e = error as? MBaaSError else { return false }
            return e.kind == .decoding && e.message.contains("field 'list.0.label' is not String")
        }
    }

    @Test func modelsRefuseValuesThatDoNotFit() throws {
        struct Huge: Model { static let className = "H"; var id: String?; var n: UInt64; var d: Double }
        #expect(throws: MBaaSError.self) { try Huge(id: nil, n: UInt64.max, d: 1).record() }
        #expect(throws: MBaaSError.self) { try Huge(id: nil, n: 1, d: .nan).record() }
        #expect(try Huge(id: nil, n: UInt64(Int64.max), d: 1).record().fields["n"] == .int(Int64.max))
    }
}

@Suite("Hexadecimal")
struct HexTests {
    @Test("bytes become two lowercase digits each, high nibble first")
    func lowercaseHex() {
        #expect([UInt8]().lowercaseHex == "")
        #expect([0x00, 0x0F, 0xA5, 0xFF, 0x10].lowercaseHex == "000fa5ff10")
        #expect(Data("abc".utf8).lowercaseHex == "616263")
        #expect((0...255).map(UInt8.init).lowercaseHex == (0...255).map { String(format: "%02x", $0) }.joined())
    }
}
