public import Foundation
public import MBaaSCore
public import MBaaSParseFamilyWire

// The JSON messages of the NCMB REST API, each with `json` (encode) and `init(json:)` (decode), so a client and a
// server read and write them the same way. Decoding errors are `MBaaSError.Kind.decoding`.

/// The response to a create (`201`): `{"objectId":"…","createDate":"…"}`; `/users` adds `sessionToken`,
/// `userName` and `authData`, `/files` has `fileName` instead of `objectId`.
public struct NCMBCreated: Sendable, Hashable {
    public var objectId: String?
    public var createDate: Date
    /// Any other members (`sessionToken`, `userName`, `authData`, `fileName`, …), in order.
    public var extras: JSONObject

    public init(objectId: String?, createDate: Date, extras: JSONObject = [:]) {
        self.objectId = objectId
        self.createDate = createDate
        self.extras = extras
    }

    public var json: JSON {
        var o = JSONObject()
        if let objectId { o["objectId"] = .string(objectId) }
        o["createDate"] = .string(ISO8601.format(createDate))
        for (k, v) in extras { o[k] = v }
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue else { throw MBaaSError(.decoding, "create response is not an object") }
        guard let date = try NCMBCodec.date(o["createDate"] ?? .null, "createDate") else {
            throw MBaaSError(.decoding, "create response without createDate")
        }
        var extras = o
        extras["objectId"] = nil
        extras["createDate"] = nil
        self.init(objectId: o["objectId"]?.stringValue, createDate: date, extras: extras)
    }
}

/// The response to an update (`200`): `{"updateDate":"…"}`.
public struct NCMBUpdated: Sendable, Hashable {
    public var updateDate: Date
    public init(updateDate: Date) { self.updateDate = updateDate }
    public var json: JSON { .object(["updateDate": .string(ISO8601.format(updateDate))]) }
    public init(json: JSON) throws(MBaaSError) {
        guard let date = try NCMBCodec.date(json["updateDate"] ?? .null, "updateDate") else {
            throw MBaaSError(.decoding, "update response without updateDate")
        }
        self.init(updateDate: date)
    }
}

/// The response to a query: `{"results":[…]}` plus `"count":N` when `count=1` was asked.
/// The Parse family's one results message (``MBaaSParseFamilyWire/ParseFamilyResults``).
public typealias NCMBResults = ParseFamilyResults

/// One entry of the file store as `GET /files` lists it:
/// `{"fileName":"a.txt","mimeType":"text/plain","fileSize":34,"createDate":…,"updateDate":…,"acl":{…}}`.
/// `fileSize` is read as a number or a numeric string (both occur).
public struct NCMBFileMetadata: Sendable, Hashable {
    public var fileName: String
    public var mimeType: String?
    public var fileSize: Int64?
    public var createDate: Date?
    public var updateDate: Date?
    public var acl: ACL?

    public init(fileName: String, mimeType: String? = nil, fileSize: Int64? = nil, createDate: Date? = nil,
                updateDate: Date? = nil, acl: ACL? = nil) {
        self.fileName = fileName
        self.mimeType = mimeType
        self.fileSize = fileSize
        self.createDate = createDate
        self.updateDate = updateDate
        self.acl = acl
    }

    public var json: JSON {
        var o: JSONObject = ["fileName": .string(fileName)]
        if let mimeType { o["mimeType"] = .string(mimeType) }
        if let fileSize { o["fileSize"] = .int(fileSize) }
        if let createDate { o["createDate"] = .string(ISO8601.format(createDate)) }
        if let updateDate { o["updateDate"] = .string(ISO8601.format(updateDate)) }
        if let acl { o["acl"] = acl.json }
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue, let name = o["fileName"]?.stringValue else {
            throw MBaaSError(.decoding, "file entry without fileName")
        }
        var size: Int64?
        switch o["fileSize"] {
        case .int(let n): size = n
        case .double(let d) where d.rounded() == d: size = Int64(d)
        case .string(let s):
            guard let n = Int64(s.trimmingCharacters(in: .whitespaces)) else {
                throw MBaaSError(.decoding, "fileSize '\(s)' is not a number")
            }
            size = n
        case nil, .null?: size = nil
        case let other?: throw MBaaSError(.decoding, "fileSize is not a number: \(other.printed())")
        }
        self.init(
            fileName: name, mimeType: o["mimeType"]?.stringValue, fileSize: size,
            createDate: try NCMBCodec.date(o["createDate"] ?? .null, "createDate"),
            updateDate: try NCMBCodec.date(o["updateDate"] ?? .null, "updateDate"),
            acl: try o["acl"].flatMap { a throws(MBaaSError) in a.isNull ? nil : try NCMBCodec.decodeACL(a) })
    }

    /// The neutral file info.
    public var fileInfo: FileInfo {
        FileInfo(reference: FileReference(name: fileName, contentType: mimeType, size: fileSize),
                 createdAt: createDate, updatedAt: updateDate, acl: acl)
    }
}

/// `POST /login` body: `{"userName":"…","password":"…"}` or `{"mailAddress":"…","password":"…"}`.
public struct NCMBLoginRequest: Sendable, Hashable {
    public var userName: String?
    public var mailAddress: String?
    public var password: String

    public init(userName: String? = nil, mailAddress: String? = nil, password: String) {
        self.userName = userName
        self.mailAddress = mailAddress
        self.password = password
    }

    public var json: JSON {
        var o = JSONObject()
        if let userName { o["userName"] = .string(userName) }
        if let mailAddress { o["mailAddress"] = .string(mailAddress) }
        o["password"] = .string(password)
        return .object(o)
    }

    /// Reads a login body (server side). A missing password is `E400003 password is empty.` in NCMB terms.
    public init(json: JSON) throws(MBaaSError) {
        guard let password = json["password"]?.stringValue, !password.isEmpty else {
            throw MBaaSError(.invalidRequest, "password is empty.", vendorCode: "E400003", httpStatus: 400)
        }
        let user = json["userName"]?.stringValue, mail = json["mailAddress"]?.stringValue
        guard user != nil || mail != nil else {
            throw MBaaSError(.invalidRequest, "userName is empty.", vendorCode: "E400003", httpStatus: 400)
        }
        self.init(userName: user, mailAddress: mail, password: password)
    }
}

/// A user object as `/users/{id}`, `/login` and sign-up return it (``ParseFamilyUserObject``). `sessionToken` is
/// present on login and sign-up.
public typealias NCMBUserObject = ParseFamilyUserObject<NCMBWire>

extension ParseFamilyUserObject where Vendor == NCMBWire {
    /// NCMB's `userName` (``username``).
    public var userName: String? { username }
    /// NCMB's `mailAddress` (``email``).
    public var mailAddress: String? { email }
}
