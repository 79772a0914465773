import Foundation
import MBaaSCore
import Testing
@testable import MBaaSNCMB

@Suite("NCMB codec")
struct CodecTests {
    static let date = ISO8601.parse("1999-12-31T14:59:59.999Z")!

    @Test("every typed value encodes to NCMB JSON and decodes back (ncmb.md §1.3)")
    func typedValues() throws {
        let cases: [(Value, String)] = [
            (.null, "null"), (.bool(true), "true"), (.int(42), "42"), (.double(1.5), "1.5"), (.string("a"), #""a""#),
            (.date(Self.date), #"{"__type":"Date","iso":"1999-12-31T14:59:59.999Z"}"#),
            (.pointer(Pointer(className: "food", objectId: "object_id")),
             #"{"__type":"Pointer","className":"food","objectId":"object_id"}"#),
            (.pointer(Pointer(className: "_User", objectId: "u1")), #"{"__type":"Pointer","className":"user","objectId":"u1"}"#),
            (.geoPoint(GeoPoint(latitude: 12, longitude: 133)), #"{"__type":"GeoPoint","latitude":12.0,"longitude":133.0}"#),
            (.array([1, "x", .date(Self.date)]), #"[1,"x",{"__type":"Date","iso":"1999-12-31T14:59:59.999Z"}]"#),
            (.object(["b": 1, "a": ["c": true]]), #"{"a":{"c":true},"b":1}"#),
        ]
        for (value, wire) in cases {
            let json = try NCMBCodec.encode(value)
            #expect(json.printed() == wire, "\(value)")
            #expect(try NCMBCodec.decode(JSON.parse(wire)) == value, "\(wire)")
        }
    }

    @Test("built-in class names in pointers read back neutral")
    func pointerClassNames() throws {
        for (wire, neutral) in [("user", "_User"), ("role", "_Role"), ("installation", "_Installation"), ("push", "_Push"),
                                ("file", "_File"), ("Memo", "Memo")] {
            let json = try JSON.parse(#"{"__type":"Pointer","className":"\#(wire)","objectId":"x"}"#)
            #expect(try NCMBCodec.decode(json) == .pointer(Pointer(className: neutral, objectId: "x")))
            #expect(NCMBClassName(neutral).wireName == wire)
        }
        #expect(NCMBClassName("_User").collectionPath == "/users")
        #expect(NCMBClassName("Memo Book").collectionPath == "/classes/Memo%20Book")
    }

    @Test("a Relation reads as a marker that refuses to be written back")
    func relation() throws {
        let value = try NCMBCodec.decode(JSON.parse(#"{"__type":"Relation","className":"user"}"#))
        #expect(value == .object(["__type": "Relation", "className": "_User"]))
        let error = #expect(throws: MBaaSError.self) { try NCMBCodec.encode(value) }
        #expect(error?.kind == .invalidRequest)
    }

    @Test("an included object decodes with its members and is written back as a Pointer")
    func includedObject() throws {
        let json = try JSON.parse(#"{"__type":"Object","className":"Post","objectId":"p1","createDate":"2015-02-25T08:02:35.470Z","title":"t"}"#)
        let value = try NCMBCodec.decode(json)
        guard case .object(let o) = value else { Issue.record("not an object"); return }
        #expect(o["objectId"] == "p1")
        #expect(o["title"] == "t")
        #expect(o["createDate"] == .date(ISO8601.parse("2015-02-25T08:02:35.470Z")!))
        #expect(try NCMBCodec.encode(value).printed() == #"{"__type":"Pointer","className":"Post","objectId":"p1"}"#)
    }

    @Test("bytes and File values are unsupported (NCMB has neither type)")
    func unsupportedTypes() {
        for value: Value in [.bytes(Data([1])), .file(FileReference(name: "a.png"))] {
            let error = #expect(throws: MBaaSError.self) { try NCMBCodec.encode(value) }
            #expect(error?.kind == .unsupported)
        }
        #expect(throws: MBaaSError.self) { try NCMBCodec.encode(.double(.nan)) }
        #expect(throws: MBaaSError.self) { try NCMBCodec.encode(.object(["__op": 1])) }
    }

    @Test("malformed typed values are decoding errors")
    func malformed() {
        for text in [#"{"__type":"Date","iso":"yesterday"}"#, #"{"__type":"Pointer","className":"a"}"#,
                     #"{"__type":"GeoPoint","latitude":"x","longitude":1}"#] {
            let error = #expect(throws: MBaaSError.self) { try NCMBCodec.decode(JSON.parse(text)) }
            #expect(error?.kind == .decoding)
        }
    }

    @Test("records: metadata from objectId/createDate/updateDate/acl, nulls are cleared fields, secrets dropped")
    func records() throws {
        let json = try JSON.parse(#"{"objectId":"7FrmPTBKSNtVjajm","createDate":"2014-06-03T11:28:30.348Z","updateDate":"2014-06-03T11:28:30.349Z","acl":{"*":{"read":true,"write":true}},"testKey":"fugafuga","gone":null,"sessionToken":"secret","d":{"__type":"Date","iso":"1999-12-31T14:59:59.999Z"}}"#)
        let record = try NCMBCodec.decodeRecord(className: "TestClass", json.objectValue!)
        #expect(record.id == "7FrmPTBKSNtVjajm")
        #expect(record.createdAt == ISO8601.parse("2014-06-03T11:28:30.348Z"))
        #expect(record.updatedAt == ISO8601.parse("2014-06-03T11:28:30.349Z"))
        #expect(record.acl == .publicReadWrite)
        #expect(record.fields == ["testKey": "fugafuga", "d": .date(Self.date)])
        let back = try NCMBCodec.encodeRecord(record)
        #expect(back["objectId"] == "7FrmPTBKSNtVjajm")
        #expect(back["createDate"] == "2014-06-03T11:28:30.348Z")
        #expect(back["testKey"] == "fugafuga")
    }

    @Test("create bodies refuse reserved names; ACLs with groups are unsupported")
    func createBody() throws {
        let body = try NCMBCodec.createBody(Record(className: "M", acl: ACL([.user("u1"): .readWrite, .role("Admins"): .read]),
                                                   fields: ["b": 2, "a": 1]))
        #expect(JSON.object(body).printed() == #"{"a":1,"b":2,"acl":{"role:Admins":{"read":true},"u1":{"read":true,"write":true}}}"#)
        for name in ["objectId", "createDate", "updateDate", "acl", "id", "createdAt", "__x", "$x"] {
            let error = #expect(throws: MBaaSError.self) { try NCMBCodec.createBody(Record(className: "M", fields: [name: 1])) }
            #expect(error?.kind == .invalidRequest)
        }
        let error = #expect(throws: MBaaSError.self) { try NCMBCodec.encode(ACL([.group("g"): .read])) }
        #expect(error?.kind == .unsupported)
    }

    @Test("update bodies: null clears, every operator encodes as NCMB's __op (ncmb.md §1.3)")
    func updateBody() throws {
        let update = RecordUpdate(changes: [
            "a": .set(5), "b": .delete, "c": .increment(2), "d": .add([1]), "e": .addUnique(["x"]), "f": .remove([.int(3)]),
        ], acl: .publicReadWrite)
        let body = try NCMBCodec.updateBody(update)
        #expect(JSON.object(body).printed() == #"{"a":5,"b":null,"c":{"__op":"Increment","amount":2},"d":{"__op":"Add","objects":[1]},"e":{"__op":"AddUnique","objects":["x"]},"f":{"__op":"Remove","objects":[3]},"acl":{"*":{"read":true,"write":true}}}"#)
        #expect(throws: MBaaSError.self) { try NCMBCodec.updateBody(RecordUpdate(changes: ["a": .increment("x")])) }
    }

    @Test("field changes decode from the wire, relation operators included")
    func fieldChanges() throws {
        let rel = try JSON.parse(#"{"__op":"AddRelation","objects":[{"__type":"Pointer","className":"user","objectId":"u"}]}"#)
        #expect(try NCMBFieldChange(json: rel) == .addRelation([Pointer(className: "_User", objectId: "u")]))
        #expect(NCMBFieldChange.addRelation([Pointer(className: "_User", objectId: "u")]).json == rel)
        let rm = try JSON.parse(#"{"__op":"RemoveRelation","objects":[{"__type":"Pointer","className":"role","objectId":"r"}]}"#)
        #expect(try NCMBFieldChange(json: rm) == .removeRelation([Pointer(className: "_Role", objectId: "r")]))
        #expect(try NCMBFieldChange(json: JSON.parse(#"{"__op":"Increment","amount":1.5}"#)) == .increment(1.5))
        #expect(try NCMBFieldChange(json: "x") == .set("x"))
        #expect(throws: MBaaSError.self) { try NCMBFieldChange(json: JSON.parse(#"{"__op":"Delete"}"#)) }
        #expect(throws: MBaaSError.self) { try NCMBFieldChange(json: JSON.parse(#"{"__op":"Add"}"#)) }
    }

    @Test("messages: create, update, results with count, file entries with fileSize as number or string")
    func messages() throws {
        let created = try NCMBCreated(json: JSON.parse(#"{"createDate":"2013-08-28T03:02:29.970Z","objectId":"U6TztFwTDrGSD88N"}"#))
        #expect(created.objectId == "U6TztFwTDrGSD88N")
        #expect(created.json.printed() == #"{"objectId":"U6TztFwTDrGSD88N","createDate":"2013-08-28T03:02:29.970Z"}"#)
        let file = try NCMBCreated(json: JSON.parse(#"{"createDate":"2015-06-10T06:03:21.663Z","fileName":"upload.text"}"#))
        #expect(file.objectId == nil && file.extras["fileName"] == "upload.text")
        #expect(try NCMBUpdated(json: JSON.parse(#"{"updateDate":"2013-08-28T06:30:03.191Z"}"#)).updateDate == ISO8601.parse("2013-08-28T06:30:03.191Z"))
        let results = try NCMBResults(json: JSON.parse(#"{"results":[{"objectId":"a"}],"count":1}"#))
        #expect(results.results.count == 1 && results.count == 1)
        #expect(throws: MBaaSError.self) { try NCMBResults(json: JSON.parse(#"{"count":1}"#)) }
        for size in ["34", #""34""#] {
            let entry = try NCMBFileMetadata(json: JSON.parse(#"{"fileName":"upfile.text","mimeType":"text/plain","fileSize":\#(size),"createDate":"2015-06-10T06:03:21.663Z","updateDate":"2015-06-10T06:03:21.663Z","acl":{}}"#))
            #expect(entry.fileSize == 34)
            #expect(entry.fileInfo.reference == FileReference(name: "upfile.text", contentType: "text/plain", size: 34))
        }
        #expect(throws: MBaaSError.self) { try NCMBFileMetadata(json: JSON.parse(#"{"fileName":"a","fileSize":"big"}"#)) }
        #expect(NCMBLoginRequest(userName: "u", password: "p").json.printed() == #"{"userName":"u","password":"p"}"#)
        let login = #expect(throws: MBaaSError.self) { try NCMBLoginRequest(json: JSON.parse(#"{"userName":"u"}"#)) }
        #expect(login?.vendorCode == "E400003")
    }
}
