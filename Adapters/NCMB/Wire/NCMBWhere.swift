import Foundation
public import MBaaSCore
import MBaaSParseFamilyWire

/// NCMB's `where` language as a typed value, encoded to and decoded from its JSON form.
///
/// ```json
/// {"money":{"$gte":50,"$lt":100},"title":"rent",
///  "$or":[{"tag":{"$in":["a","b"]}},{"note":{"$exists":false}}],
///  "$relatedTo":{"object":{"__type":"Pointer","className":"role","objectId":"…"},"key":"belongUser"}}
/// ```
/// Every operator NCMB documents is here: `$ne $lt $lte $gt $gte $in $nin $all $inArray $ninArray $exists
/// $regex $inQuery $select $nearSphere $maxDistanceIn{Kilometers,Miles,Radians} $within/$box`, plus `$or` and
/// `$relatedTo` at the top level. Equality is a bare value. Operand values are NCMB JSON (see ``NCMBCodec``).
/// NCMB has no `$and`, `$nor`, `$not`, `$notInQuery`, `$dontSelect` or `$options`; decoding them is an error.
public struct NCMBWhere: Sendable, Hashable {
    /// The conditions on one key.
    public enum Constraint: Sendable, Hashable {
        /// `{"key": value}`
        case equals(JSON)
        /// `{"key": {"$op": operand, ...}}`, in order.
        case operators([NCMBOperator])
    }

    /// One key and its constraint.
    public struct Entry: Sendable, Hashable {
        public var key: String
        public var constraint: Constraint
        public init(key: String, constraint: Constraint) {
            self.key = key
            self.constraint = constraint
        }
    }

    /// `{"object": Pointer, "key": relation field}`: records that are members of that object's relation.
    public struct RelatedTo: Sendable, Hashable {
        public var object: Pointer
        public var key: String
        public init(object: Pointer, key: String) {
            self.object = object
            self.key = key
        }
    }

    public var entries: [Entry]
    /// `$or`: records matching any of these.
    public var or: [NCMBWhere]?
    public var relatedTo: RelatedTo?

    public init(entries: [Entry] = [], or: [NCMBWhere]? = nil, relatedTo: RelatedTo? = nil) {
        self.entries = entries
        self.or = or
        self.relatedTo = relatedTo
    }

    public var isEmpty: Bool { entries.isEmpty && or == nil && relatedTo == nil }

    /// The constraint on a key, if any.
    public subscript(key: String) -> Constraint? { entries.first { $0.key == key }?.constraint }

    // MARK: JSON

    public var json: JSON {
        var o = JSONObject()
        for e in entries {
            switch e.constraint {
            case .equals(let v): o[e.key] = v
            case .operators(let ops):
                var m = JSONObject()
                for op in ops { m[op.name] = op.operand }
                o[e.key] = .object(m)
            }
        }
        if let or { o["$or"] = .array(or.map(\.json)) }
        if let relatedTo {
            o["$relatedTo"] = .object(["object": NCMBCodec.pointerJSON(relatedTo.object), "key": .string(relatedTo.key)])
        }
        return .object(o)
    }

    /// Parses a `where` object. Unknown or unsupported operators are ``MBaaSError/Kind/invalidRequest`` naming the
    /// path (`where.money.$foo`).
    public init(json: JSON, path: String = "where") throws(MBaaSError) {
        guard let object = json.objectValue else {
            throw MBaaSError(.invalidRequest, "\(path): must be a JSON object, got \(json.printed())")
        }
        self.init()
        for (key, value) in object {
            let here = "\(path).\(key)"
            switch key {
            case "$or":
                guard let items = value.arrayValue, !items.isEmpty else {
                    throw MBaaSError(.invalidRequest, "\(here): takes a non-empty array of conditions")
                }
                var children: [NCMBWhere] = []
                for (i, item) in items.enumerated() { children.append(try NCMBWhere(json: item, path: "\(here)[\(i)]")) }
                or = children
            case "$relatedTo":
                guard let key = value["key"]?.stringValue, let objectJSON = value["object"],
                      case .pointer(let p)? = try? NCMBCodec.decode(objectJSON)
                else { throw MBaaSError(.invalidRequest, "\(here): needs {\"object\":Pointer,\"key\":\"…\"}") }
                relatedTo = RelatedTo(object: p, key: key)
            default:
                if key.hasPrefix("$") {
                    throw MBaaSError(.invalidRequest, "\(here): NCMB has no top-level operator '\(key)' ($or, $relatedTo)")
                }
                if let ops = value.objectValue, let first = ops.keys.first, first.hasPrefix("$") {
                    var list: [NCMBOperator] = []
                    for (name, operand) in ops {
                        list.append(try NCMBOperator(name: name, operand: operand, path: "\(here).\(name)"))
                    }
                    entries.append(Entry(key: key, constraint: .operators(list)))
                } else {
                    entries.append(Entry(key: key, constraint: .equals(value)))
                }
            }
        }
    }
}

/// A subquery of `$inQuery` and `$select`: `{"className":"…","where":{…},"limit":n,"skip":n}`.
public struct NCMBSubquery: Sendable, Hashable {
    /// The NCMB class name (`user`, not `_User`).
    public var className: String
    public var where_: NCMBWhere
    public var limit: Int?
    public var skip: Int?

    public init(className: String, where: NCMBWhere = NCMBWhere(), limit: Int? = nil, skip: Int? = nil) {
        self.className = className
        self.where_ = `where`
        self.limit = limit
        self.skip = skip
    }

    public var json: JSON {
        var o: JSONObject = ["className": .string(className), "where": where_.json]
        if let limit { o["limit"] = .int(Int64(limit)) }
        if let skip { o["skip"] = .int(Int64(skip)) }
        return .object(o)
    }

    public init(json: JSON, path: String) throws(MBaaSError) {
        guard let cls = json["className"]?.stringValue else {
            throw MBaaSError(.invalidRequest, "\(path): subquery needs a className")
        }
        self.init(className: cls, where: try json["where"].map { w throws(MBaaSError) in try NCMBWhere(json: w, path: "\(path).where") } ?? NCMBWhere(),
                  limit: json["limit"]?.intValue.map(Int.init), skip: json["skip"]?.intValue.map(Int.init))
    }
}

/// One `$operator` of a key's constraint.
public enum NCMBOperator: Sendable, Hashable {
    case ne(JSON), lt(JSON), lte(JSON), gt(JSON), gte(JSON)
    /// The value is one of these (on an array field: any element is).
    case `in`([JSON])
    case nin([JSON])
    /// The array field contains all of these.
    case all([JSON])
    /// The array field contains any of these (NCMB-specific).
    case inArray([JSON])
    /// The array field contains none of these (NCMB-specific).
    case ninArray([JSON])
    case exists(Bool)
    /// A regular expression; NCMB has no `$options`.
    case regex(String)
    /// The pointer field points into the records the subquery matches.
    case inQuery(NCMBSubquery)
    /// The field's value equals the `key` field of a record the subquery matches.
    case select(NCMBSubquery, key: String)
    /// Sorted by distance from a point.
    case nearSphere(GeoPoint)
    case maxDistanceInKilometers(Double)
    case maxDistanceInMiles(Double)
    case maxDistanceInRadians(Double)
    /// Inside the box from the south-west to the north-east corner.
    case withinBox(southWest: GeoPoint, northEast: GeoPoint)

    /// `$ne`, `$in`, …
    public var name: String {
        switch self {
        case .ne: "$ne"
        case .lt: "$lt"
        case .lte: "$lte"
        case .gt: "$gt"
        case .gte: "$gte"
        case .in: "$in"
        case .nin: "$nin"
        case .all: "$all"
        case .inArray: "$inArray"
        case .ninArray: "$ninArray"
        case .exists: "$exists"
        case .regex: "$regex"
        case .inQuery: "$inQuery"
        case .select: "$select"
        case .nearSphere: "$nearSphere"
        case .maxDistanceInKilometers: "$maxDistanceInKilometers"
        case .maxDistanceInMiles: "$maxDistanceInMiles"
        case .maxDistanceInRadians: "$maxDistanceInRadians"
        case .withinBox: "$within"
        }
    }

    public var operand: JSON {
        func geo(_ g: GeoPoint) -> JSON {
            .object(["__type": "GeoPoint", "latitude": .double(g.latitude), "longitude": .double(g.longitude)])
        }
        switch self {
        case .ne(let v), .lt(let v), .lte(let v), .gt(let v), .gte(let v): return v
        case .in(let vs), .nin(let vs), .all(let vs), .inArray(let vs), .ninArray(let vs): return .array(vs)
        case .exists(let b): return .bool(b)
        case .regex(let p): return .string(p)
        case .inQuery(let q): return q.json
        case .select(let q, let key): return .object(["query": q.json, "key": .string(key)])
        case .nearSphere(let g): return geo(g)
        case .maxDistanceInKilometers(let d), .maxDistanceInMiles(let d), .maxDistanceInRadians(let d): return .double(d)
        case .withinBox(let sw, let ne): return .object(["$box": .array([geo(sw), geo(ne)])])
        }
    }

    public init(name: String, operand: JSON, path: String) throws(MBaaSError) {
        func list() throws(MBaaSError) -> [JSON] {
            guard let a = operand.arrayValue else { throw MBaaSError(.invalidRequest, "\(path): takes an array") }
            return a
        }
        func number() throws(MBaaSError) -> Double {
            guard let d = operand.doubleValue else { throw MBaaSError(.invalidRequest, "\(path): takes a number") }
            return d
        }
        func geo(_ json: JSON) throws(MBaaSError) -> GeoPoint {
            guard case .geoPoint(let g)? = try? NCMBCodec.decode(json) else {
                throw MBaaSError(.invalidRequest, "\(path): takes a GeoPoint")
            }
            return g
        }
        switch name {
        case "$ne": self = .ne(operand)
        case "$lt": self = .lt(operand)
        case "$lte": self = .lte(operand)
        case "$gt": self = .gt(operand)
        case "$gte": self = .gte(operand)
        case "$in": self = .in(try list())
        case "$nin": self = .nin(try list())
        case "$all": self = .all(try list())
        case "$inArray": self = .inArray(try list())
        case "$ninArray": self = .ninArray(try list())
        case "$exists":
            guard let b = operand.boolValue else { throw MBaaSError(.invalidRequest, "\(path): takes true or false") }
            self = .exists(b)
        case "$regex":
            guard let s = operand.stringValue else { throw MBaaSError(.invalidRequest, "\(path): takes a string") }
            self = .regex(s)
        case "$inQuery": self = .inQuery(try NCMBSubquery(json: operand, path: path))
        case "$select":
            guard let q = operand["query"], let key = operand["key"]?.stringValue else {
                throw MBaaSError(.invalidRequest, "\(path): needs {\"query\":{…},\"key\":\"…\"}")
            }
            self = .select(try NCMBSubquery(json: q, path: "\(path).query"), key: key)
        case "$nearSphere": self = .nearSphere(try geo(operand))
        case "$maxDistanceInKilometers": self = .maxDistanceInKilometers(try number())
        case "$maxDistanceInMiles": self = .maxDistanceInMiles(try number())
        case "$maxDistanceInRadians": self = .maxDistanceInRadians(try number())
        case "$within":
            guard let box = operand["$box"]?.arrayValue, box.count == 2 else {
                throw MBaaSError(.invalidRequest, "\(path): takes {\"$box\":[southWest, northEast]}")
            }
            self = .withinBox(southWest: try geo(box[0]), northEast: try geo(box[1]))
        default:
            throw MBaaSError(.invalidRequest, "\(path): NCMB has no operator '\(name)'")
        }
    }
}

/// The query-string parameters of an NCMB query (`GET /classes/{class}`, `/users`, `/roles`, `/files`, …):
/// `where`, `order`, `limit` (1…1000, default 100), `skip`, `count=1`, `include`. NCMB has no `keys`.
public struct NCMBQuery: Sendable, Hashable {
    public static let maxLimit = 1000
    public static let defaultLimit = 100
    /// NCMB's order when none is given.
    public static let defaultOrder = ["-createDate"]

    public var where_: NCMBWhere?
    /// Keys, `-key` for descending.
    public var order: [String]
    public var limit: Int?
    public var skip: Int?
    public var count: Bool
    /// Pointer fields to expand in place (`post.author` for nested).
    public var include: [String]

    public init(where: NCMBWhere? = nil, order: [String] = [], limit: Int? = nil, skip: Int? = nil, count: Bool = false,
                include: [String] = []) {
        self.where_ = `where`
        self.order = order
        self.limit = limit
        self.skip = skip
        self.count = count
        self.include = include
    }

    /// The parameters (not yet percent-encoded), in byte order of their names: `count`, `include`, `limit`,
    /// `order`, `skip`, `where`.
    public var queryItems: [(String, String)] {
        var items: [(String, String)] = []
        if count { items.append(("count", "1")) }
        if !include.isEmpty { items.append(("include", include.joined(separator: ","))) }
        if let limit { items.append(("limit", String(limit))) }
        if !order.isEmpty { items.append(("order", order.joined(separator: ","))) }
        if let skip { items.append(("skip", String(skip))) }
        if let w = where_, !w.isEmpty { items.append(("where", w.json.printed())) }
        return items
    }

    /// Reads decoded query parameters (server side). Bad values are ``MBaaSError/Kind/invalidRequest`` with NCMB's
    /// code (`E400002` for a bad `where` or `limit`).
    public init(queryItems: [(String, String)]) throws(MBaaSError) {
        self.init()
        for (name, value) in queryItems {
            switch name {
            case "where":
                let json: JSON
                do { json = try JSON.parse(value) } catch {
                    throw MBaaSError(.invalidRequest, "where is invalid.", vendorCode: "E400002", httpStatus: 400)
                }
                do { where_ = try NCMBWhere(json: json) } catch {
                    throw MBaaSError(.invalidRequest, error.message, vendorCode: "E400002", httpStatus: 400)
                }
            case "order": order = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            case "limit":
                guard let n = Int(value), (0...NCMBQuery.maxLimit).contains(n) else {
                    throw MBaaSError(.invalidRequest, "limit is invalid.", vendorCode: "E400002", httpStatus: 400)
                }
                limit = n
            case "skip":
                guard let n = Int(value), n >= 0 else {
                    throw MBaaSError(.invalidRequest, "skip is invalid.", vendorCode: "E400002", httpStatus: 400)
                }
                skip = n
            case "count": count = value == "1"
            case "include": include = value.split(separator: ",").map(String.init)
            default: continue
            }
        }
    }
}
