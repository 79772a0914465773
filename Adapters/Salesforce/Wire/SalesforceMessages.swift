public import Foundation
public import MBaaSCore

/// A save result: the 201 body of a create, `{"id","success","errors"}` (lowercase `id`) [capture], and each item
/// of a collection response, `{id?, success, errors:[{statusCode,message,fields}], created?}` [sdk].
public struct SalesforceSaveResult: Sendable, Hashable {
    public var id: String?
    public var success: Bool
    public var errors: [SalesforceErrorItem]
    /// Upserts only.
    public var created: Bool?

    public init(id: String?, success: Bool, errors: [SalesforceErrorItem] = [], created: Bool? = nil) {
        self.id = id
        self.success = success
        self.errors = errors
        self.created = created
    }

    /// The single-record form (`errors` use `errorCode`) or the collection form (`statusCode`).
    public func json(inCollection: Bool = false) -> JSON {
        var o: JSONObject = [:]
        if let id { o["id"] = .string(id) } else if !inCollection { o["id"] = .null }
        o["success"] = .bool(success)
        o["errors"] = .array(errors.map { $0.json(inCollection: inCollection) })
        if let created { o["created"] = .bool(created) }
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue, let success = o["success"]?.boolValue else {
            throw MBaaSError(.decoding, "a save result must be an object with a boolean success")
        }
        self.init(id: o["id"]?.stringValue, success: success,
                  errors: (o["errors"]?.arrayValue ?? []).compactMap(SalesforceErrorItem.init(json:)),
                  created: o["created"]?.boolValue)
    }
}

/// A query page, `{"totalSize","done","nextRecordsUrl"?,"records":[…]}` [capture]: `totalSize` is the full count
/// on every page, the last page has `done:true` and no `nextRecordsUrl`, pages hold at most 2000 rows.
/// `SELECT COUNT()` answers `{totalSize:N,done:true,records:[]}` [capture; the SOQL guide's "records null" is read too].
public struct SalesforceQueryPage: Sendable, Hashable {
    public var totalSize: Int
    public var done: Bool
    /// A path, `/services/data/v53.0/query/01gB000003OCxSPIA1-2000` (simple-salesforce's tests use an absolute URL,
    /// which ``nextRecordsPath`` reduces to its path).
    public var nextRecordsUrl: String?
    public var records: [JSONObject]

    public init(totalSize: Int, done: Bool, nextRecordsUrl: String? = nil, records: [JSONObject]) {
        self.totalSize = totalSize
        self.done = done
        self.nextRecordsUrl = nextRecordsUrl
        self.records = records
    }

    /// The path of ``nextRecordsUrl`` (an absolute URL's path; a path as is).
    public var nextRecordsPath: String? {
        guard let next = nextRecordsUrl else { return nil }
        if next.hasPrefix("/") { return next }
        return URL(string: next).map { $0.path }
    }

    public var json: JSON {
        var o: JSONObject = ["totalSize": .int(Int64(totalSize)), "done": .bool(done)]
        if let nextRecordsUrl { o["nextRecordsUrl"] = .string(nextRecordsUrl) }
        o["records"] = .array(records.map(JSON.object))
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue, let total = o["totalSize"]?.intValue, let done = o["done"]?.boolValue else {
            throw MBaaSError(.decoding, "a query page must be an object with totalSize and done")
        }
        var records: [JSONObject] = []
        if let r = o["records"], !r.isNull {
            guard let items = r.arrayValue else { throw MBaaSError(.decoding, "a query page's records must be an array") }
            for item in items {
                guard let ro = item.objectValue else { throw MBaaSError(.decoding, "a query page's record must be an object") }
                records.append(ro)
            }
        }
        self.init(totalSize: Int(total), done: done, nextRecordsUrl: o["nextRecordsUrl"]?.stringValue, records: records)
    }
}

/// An sObject Collections request body, `{"allOrNone":bool,"records":[{"attributes":{"type":"Account"},…}]}`
/// (create: POST; update: PATCH with `Id` in each record) [doc/sdk: salesforce.md "Composite and sObject
/// Collections"]; at most ``SalesforceWire/maxCollectionSize`` records.
public struct SalesforceCollectionRequest: Sendable, Hashable {
    public var allOrNone: Bool
    public var records: [JSONObject]

    public init(allOrNone: Bool, records: [JSONObject]) {
        self.allOrNone = allOrNone
        self.records = records
    }

    public var json: JSON { .object(["allOrNone": .bool(allOrNone), "records": .array(records.map(JSON.object))]) }

    /// Reads a body; `invalidRequest` (JSON_PARSER_ERROR) when it is not this shape, EXCEEDED_ID_LIMIT beyond 200.
    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue, let items = o["records"]?.arrayValue else {
            throw MBaaSError(.invalidRequest, "the body must be an object with a records array", vendorCode: "JSON_PARSER_ERROR")
        }
        guard items.count <= SalesforceWire.maxCollectionSize else {
            throw MBaaSError(.invalidRequest, "record limit exceeded: \(items.count) records, at most \(SalesforceWire.maxCollectionSize) per request",
                             vendorCode: "EXCEEDED_ID_LIMIT")
        }
        var records: [JSONObject] = []
        for item in items {
            guard let r = item.objectValue else {
                throw MBaaSError(.invalidRequest, "each record must be an object", vendorCode: "JSON_PARSER_ERROR")
            }
            records.append(r)
        }
        self.init(allOrNone: o["allOrNone"]?.boolValue ?? false, records: records)
    }

    /// The collection results of a response body: an array in request order; a retrieve's missing record is `null`
    /// [sdk], read here as `nil`.
    public static func results(_ json: JSON) throws(MBaaSError) -> [SalesforceSaveResult] {
        guard let items = json.arrayValue else { throw MBaaSError(.decoding, "a collection response must be an array") }
        var out: [SalesforceSaveResult] = []
        for item in items { out.append(try SalesforceSaveResult(json: item)) }
        return out
    }
}

/// The part of `GET /sobjects/{T}/describe` the client reads: the type's name and its fields' names and types
/// [doc: salesforce.md "Describe"].
public struct SalesforceDescribe: Sendable, Hashable {
    public struct FieldInfo: Sendable, Hashable {
        public var name: String
        public var type: String
        public var updateable: Bool
        public var createable: Bool
        public init(name: String, type: String, updateable: Bool = true, createable: Bool = true) {
            self.name = name
            self.type = type
            self.updateable = updateable
            self.createable = createable
        }
    }

    public var name: String
    public var fields: [FieldInfo]

    public init(name: String, fields: [FieldInfo]) {
        self.name = name
        self.fields = fields
    }

    public var json: JSON {
        .object(["name": .string(name), "label": .string(name), "custom": .bool(name.hasSuffix("__c")),
                 "createable": true, "updateable": true,
                 "fields": .array(fields.map {
                     .object(["name": .string($0.name), "type": .string($0.type), "label": .string($0.name),
                              "updateable": .bool($0.updateable), "createable": .bool($0.createable)])
                 })])
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue, let name = o["name"]?.stringValue, let fs = o["fields"]?.arrayValue else {
            throw MBaaSError(.decoding, "a describe body must have name and fields")
        }
        self.init(name: name, fields: fs.compactMap { f in
            guard let fo = f.objectValue, let n = fo["name"]?.stringValue else { return nil }
            return FieldInfo(name: n, type: fo["type"]?.stringValue ?? "string",
                             updateable: fo["updateable"]?.boolValue ?? true, createable: fo["createable"]?.boolValue ?? true)
        })
    }
}

/// The Composite API, `POST /composite` [doc: REST API Developer Guide, "Composite"; the sub-response shape is also in
/// salesforce.md "Composite and sObject Collections" (R)]: up to 25 REST subrequests in one call; with `allOrNone` a
/// failing one rolls back them all. The client sends a batch that mixes creates, updates and deletes this way (one
/// sObject Collections call takes one verb); the dialect answers it atomically.
public struct SalesforceCompositeRequest: Sendable, Hashable {
    /// One subrequest: a method, a REST path (`/services/data/vNN.0/sobjects/…`), a reference id, a body.
    public struct Subrequest: Sendable, Hashable {
        public var method: String
        public var url: String
        public var referenceId: String
        public var body: JSON?

        public init(method: String, url: String, referenceId: String, body: JSON? = nil) {
            self.method = method
            self.url = url
            self.referenceId = referenceId
            self.body = body
        }
    }

    public var allOrNone: Bool
    public var subrequests: [Subrequest]

    public init(allOrNone: Bool, subrequests: [Subrequest]) {
        self.allOrNone = allOrNone
        self.subrequests = subrequests
    }

    public var json: JSON {
        .object(["allOrNone": .bool(allOrNone), "compositeRequest": .array(subrequests.map { r in
            var o: JSONObject = ["method": .string(r.method), "url": .string(r.url), "referenceId": .string(r.referenceId)]
            if let body = r.body { o["body"] = body }
            return .object(o)
        })])
    }

    /// Reads a body; `invalidRequest` (JSON_PARSER_ERROR) when it is not this shape, beyond 25 subrequests too.
    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue, let items = o["compositeRequest"]?.arrayValue else {
            throw MBaaSError(.invalidRequest, "the body must be an object with a compositeRequest array", vendorCode: "JSON_PARSER_ERROR")
        }
        guard !items.isEmpty, items.count <= SalesforceWire.maxCompositeSubrequests else {
            throw MBaaSError(.invalidRequest, "a composite request holds 1 to \(SalesforceWire.maxCompositeSubrequests) subrequests, got \(items.count)",
                             vendorCode: "INVALID_API_INPUT")
        }
        var subrequests: [Subrequest] = []
        for item in items {
            guard let method = item["method"]?.stringValue, let url = item["url"]?.stringValue,
                  let reference = item["referenceId"]?.stringValue
            else {
                throw MBaaSError(.invalidRequest, "each subrequest needs method, url and referenceId", vendorCode: "JSON_PARSER_ERROR")
            }
            subrequests.append(Subrequest(method: method, url: url, referenceId: reference, body: item["body"]))
        }
        self.init(allOrNone: o["allOrNone"]?.boolValue ?? false, subrequests: subrequests)
    }
}

/// The answer of ``SalesforceCompositeRequest``: HTTP 200 with `{compositeResponse:[{body, httpHeaders,
/// httpStatusCode, referenceId}]}` in request order; an error body is the REST error array [R]. With `allOrNone`,
/// the subrequests rolled back because another failed answer 400 `PROCESSING_HALTED` [doc].
public struct SalesforceCompositeResponse: Sendable, Hashable {
    public struct Subresponse: Sendable, Hashable {
        public var body: JSON
        public var httpHeaders: [String: String]
        public var httpStatusCode: Int
        public var referenceId: String

        public init(body: JSON, httpHeaders: [String: String] = [:], httpStatusCode: Int, referenceId: String) {
            self.body = body
            self.httpHeaders = httpHeaders
            self.httpStatusCode = httpStatusCode
            self.referenceId = referenceId
        }
    }

    public var subresponses: [Subresponse]

    public init(subresponses: [Subresponse]) { self.subresponses = subresponses }

    /// The error of a subrequest rolled back because another one failed [doc].
    public static let processingHalted = SalesforceErrorItem(
        message: "The transaction was rolled back since another operation in the same transaction failed.",
        errorCode: "PROCESSING_HALTED")

    public var json: JSON {
        .object(["compositeResponse": .array(subresponses.map { r in
            .object(["body": r.body, "httpHeaders": .object(JSONObject(r.httpHeaders.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) })),
                     "httpStatusCode": .int(Int64(r.httpStatusCode)), "referenceId": .string(r.referenceId)])
        })])
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let items = json["compositeResponse"]?.arrayValue else {
            throw MBaaSError(.decoding, "a composite response must be an object with a compositeResponse array")
        }
        var out: [Subresponse] = []
        for item in items {
            guard let status = item["httpStatusCode"]?.intValue, let reference = item["referenceId"]?.stringValue else {
                throw MBaaSError(.decoding, "each composite sub-response needs httpStatusCode and referenceId")
            }
            var headers: [String: String] = [:]
            for (k, v) in item["httpHeaders"]?.objectValue ?? [:] { if let s = v.stringValue { headers[k] = s } }
            out.append(Subresponse(body: item["body"] ?? .null, httpHeaders: headers, httpStatusCode: Int(status), referenceId: reference))
        }
        self.init(subresponses: out)
    }

    /// The REST error items of a failed sub-response's body (an array of `{message, errorCode}`).
    public static func errors(_ body: JSON) -> [SalesforceErrorItem] {
        (body.arrayValue ?? []).compactMap(SalesforceErrorItem.init(json:))
    }
}
