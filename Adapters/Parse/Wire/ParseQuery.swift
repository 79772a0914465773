import Foundation
public import MBaaSCore
import MBaaSParseFamilyWire

/// The parameters of a Parse find: `where`, `order`, `limit`, `skip`, `keys`, `excludeKeys`, `include`, `count`.
///
/// Encoded as the REST guide writes them: `where` as JSON text, `order`/`keys`/`excludeKeys`/`include` joined with
/// commas, `count=1`. Decoding (server side) also accepts the Parse-Swift forms: each value JSON-decoded with a
/// raw-string fallback, arrays joined, `count=true` (parse.md, Transport).
public struct ParseQuery: Sendable, Hashable {
    public var where_: JSONObject?
    /// Keys, `-key` descending.
    public var order: [String]
    public var limit: Int?
    public var skip: Int?
    public var keys: [String]?
    public var excludeKeys: [String]?
    public var include: [String]?
    public var count: Bool

    public init(where: JSONObject? = nil, order: [String] = [], limit: Int? = nil, skip: Int? = nil,
                keys: [String]? = nil, excludeKeys: [String]? = nil, include: [String]? = nil, count: Bool = false) {
        self.where_ = `where`
        self.order = order
        self.limit = limit
        self.skip = skip
        self.keys = keys
        self.excludeKeys = excludeKeys
        self.include = include
        self.count = count
    }

    /// The query items, in a fixed order (`where`, `order`, `limit`, `skip`, `keys`, `excludeKeys`, `include`,
    /// `count`), unencoded (``URL/build(base:path:query:)`` percent-encodes them).
    public var queryItems: [(String, String)] {
        var items: [(String, String)] = []
        if let where_, !where_.isEmpty { items.append(("where", JSON.object(where_).printed())) }
        if !order.isEmpty { items.append(("order", order.joined(separator: ","))) }
        if let limit { items.append(("limit", String(limit))) }
        if let skip, skip > 0 { items.append(("skip", String(skip))) }
        if let keys { items.append(("keys", keys.joined(separator: ","))) }
        if let excludeKeys { items.append(("excludeKeys", excludeKeys.joined(separator: ","))) }
        if let include { items.append(("include", include.joined(separator: ","))) }
        if count { items.append(("count", "1")) }
        return items
    }

    /// Reads decoded query items (server side). An unknown parameter is 102 "Invalid parameter for query: X".
    public init(queryItems: [(String, String)]) throws(MBaaSError) {
        self.init()
        func invalid(_ message: String) -> MBaaSError { MBaaSError(.invalidRequest, message, vendorCode: "102", httpStatus: 400) }
        func list(_ text: String) -> [String] {
            if let json = try? JSON.parse(text), let array = json.arrayValue {
                return array.compactMap(\.stringValue).flatMap { $0.split(separator: ",").map(String.init) }
            }
            return text.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
        }
        func int(_ name: String, _ text: String) throws(MBaaSError) -> Int {
            guard let n = Int(text), n >= 0 else { throw invalid("\(name) must be a non-negative integer, got '\(text)'") }
            return n
        }
        for (name, value) in queryItems {
            switch name {
            case "where":
                guard let json = try? JSON.parse(value), let o = json.objectValue else { throw invalid("where must be a JSON object") }
                where_ = o
            case "order": order = list(value)
            case "limit": limit = try int(name, value)
            case "skip": skip = try int(name, value)
            case "keys": keys = list(value)
            case "excludeKeys": excludeKeys = list(value)
            case "include": include = list(value)
            case "count": count = ["1", "true"].contains(value.lowercased())
            case "readPreference", "includeReadPreference", "subqueryReadPreference", "_method": continue
            default: throw invalid("Invalid parameter for query: \(name)")
            }
        }
    }
}

/// How a translated query pages: by `objectId` (keyset) or by `skip` (offset).
public enum ParsePaging: Sendable, Hashable {
    /// Ordered by `objectId` alone: the next page asks `objectId > last` (`<` descending). Stable under inserts
    /// and deletes, and no `skip` cost on the server.
    case keyset(ascending: Bool)
    /// Ordered by other keys (with `objectId` appended as a tie-breaker): the next page skips what was read.
    case offset(start: Int)
}

/// Translates a neutral ``Query`` into Parse parameters and back (``predicate(_:)``, ``query(_:className:)``).
///
/// - `id` is `objectId`; `createdAt`/`updatedAt` keep their names and compare with Date hashes (the REST guide's
///   `{"createdAt":{"$gte":{"__type":"Date","iso":…}}}`).
/// - `eq` is a bare value; `ne lt lte gt gte in nin exists` are `$ne … $exists`; `containsAll` is `$all`; `regex` is
///   `$regex` (+ `$options` when non-empty); `prefix` is `$regex` `^\Q…\E`, the quoting of the Parse JS SDK's
///   `startsWith` (`\E` inside the text is written `\E\\E\Q`).
/// - `and` merges conditions into one object when keys and operators do not collide, else it is `$and`; `or` is
///   `$or`; `not(or(ps))` is `$nor:[ps]` and any other `not(p)` is `$nor:[p]` (neither-nor of one).
/// - Reverse: `$select $dontSelect $inQuery $notInQuery $relatedTo $text $nearSphere $within $geoWithin
///   $geoIntersects $maxDistance… $containedBy $centerSphere $box $polygon $point` have no neutral form and are
///   ``MBaaSError/Kind/unsupported`` naming the operator.
///
/// **Paging.** With no sort, or a sort on `id` alone, pages are keyset pages on `objectId` (``ParsePaging/keyset(ascending:)``):
/// `order=objectId` and, after the first page, `objectId > last` merged into the `where`; the cursor is
/// `after:<objectId>`. Any other sort pages by `skip` with `objectId` appended to `order` so that equal sort keys
/// keep one order across pages; the cursor is `skip:<n>`.
public enum ParseQueryTranslator {
    public static func wireKey(_ key: String) -> String { key == "id" ? "objectId" : key }
    public static func neutralKey(_ key: String) -> String { key == "objectId" ? "id" : key }

    // MARK: Neutral → Parse

    /// The `where` object of a predicate.
    public static func `where`(_ predicate: QueryPredicate) throws(MBaaSError) -> JSONObject {
        switch predicate {
        case .and(let parts):
            let flat = flattenAnd(parts)
            var objects: [JSONObject] = []
            for p in flat { objects.append(try `where`(p)) }
            if let merged = merge(objects) { return merged }
            return ["$and": .array(objects.map(JSON.object))]
        case .or(let parts):
            var children: [JSON] = []
            for p in flattenOr(parts) { children.append(.object(try `where`(p))) }
            return ["$or": .array(children)]
        case .not(let inner):
            let parts: [QueryPredicate]
            if case .or(let ps) = inner { parts = flattenOr(ps) } else { parts = [inner] }
            var children: [JSON] = []
            for p in parts { children.append(.object(try `where`(p))) }
            return ["$nor": .array(children)]
        case .compare(let k, let c, let v):
            let operand = try ParseCodec.encode(v, path: "where.\(k)")
            if c == .eq { return [wireKey(k): operand] }
            return [wireKey(k): .object(["$" + c.rawValue: operand])]
        case .in(let k, let vs): return [wireKey(k): .object(["$in": .array(try list(vs, k))])]
        case .notIn(let k, let vs): return [wireKey(k): .object(["$nin": .array(try list(vs, k))])]
        case .containsAll(let k, let vs): return [wireKey(k): .object(["$all": .array(try list(vs, k))])]
        case .exists(let k, let b): return [wireKey(k): .object(["$exists": .bool(b)])]
        case .prefix(let k, let s): return [wireKey(k): .object(["$regex": .string(quotedPrefix(s))])]
        case .regex(let k, let pattern, let options):
            var o: JSONObject = ["$regex": .string(pattern)]
            if !options.isEmpty { o["$options"] = .string(options) }
            return [wireKey(k): .object(o)]
        }
    }

    /// The Parse parameters of a neutral query and how it pages (not counting: see ``countQuery(_:capabilities:)``).
    public static func translate(_ query: Query, capabilities: Capabilities = ParseWire.capabilities)
        throws(MBaaSError) -> (query: ParseQuery, paging: ParsePaging)
    {
        try query.validate(against: capabilities, backend: "parse")
        var out = ParseQuery()
        var predicate = query.predicate
        let paging: ParsePaging
        let keyset = query.sort.isEmpty || (query.sort.count == 1 && query.sort[0].key == "id")
        if keyset {
            let ascending = query.sort.first?.ascending ?? true
            paging = .keyset(ascending: ascending)
            out.order = [(ascending ? "" : "-") + "objectId"]
            if let cursor = query.cursor {
                guard cursor.hasPrefix("after:"), cursor.count > 6 else {
                    throw MBaaSError(.invalidRequest, "cursor '\(cursor)' is not a cursor of this query (after:<objectId>)")
                }
                let bound = QueryPredicate.compare("id", ascending ? .gt : .lt, .string(String(cursor.dropFirst(6))))
                predicate = predicate.map { .and([$0, bound]) } ?? bound
            } else if let skip = query.skip, skip > 0 {
                out.skip = skip
            }
        } else {
            out.order = query.sort.map { ($0.ascending ? "" : "-") + wireKey($0.key) }
            if !query.sort.contains(where: { $0.key == "id" }) { out.order.append("objectId") }
            var start = query.skip ?? 0
            if let cursor = query.cursor {
                guard cursor.hasPrefix("skip:"), let n = Int(cursor.dropFirst(5)), n >= 0 else {
                    throw MBaaSError(.invalidRequest, "cursor '\(cursor)' is not a cursor of this query (skip:<n>)")
                }
                start = n
            }
            if start > 0 { out.skip = start }
            paging = .offset(start: start)
        }
        if let predicate { out.where_ = try `where`(predicate) }
        out.limit = min(query.limit ?? capabilities.defaultPageSize, capabilities.maxPageSize)
        if let keys = query.keys { out.keys = keys.map(wireKey) }
        return (out, paging)
    }

    /// The cursor of the page after one that returned `count` records (the last one `lastId`), or `nil` when that
    /// page was the last (fewer records than the limit).
    public static func nextCursor(paging: ParsePaging, limit: Int, count: Int, lastId: String?) -> String? {
        guard limit > 0, count >= limit else { return nil }
        switch paging {
        case .keyset: return lastId.map { "after:" + $0 }
        case .offset(let start): return "skip:\(start + count)"
        }
    }

    /// `count=1&limit=0` with the query's `where` (the REST guide's count form; the answer is `{"results":[],"count":N}`).
    public static func countQuery(_ query: Query, capabilities: Capabilities = ParseWire.capabilities) throws(MBaaSError) -> ParseQuery {
        let q = query.forCounting
        try q.validate(against: capabilities, backend: "parse")
        var out = ParseQuery(limit: 0, count: true)
        if let p = q.predicate { out.where_ = try `where`(p) }
        return out
    }

    /// `^\Q<text>\E`, as the Parse JS SDK quotes a `startsWith` prefix.
    public static func quotedPrefix(_ text: String) -> String {
        "^\\Q" + text.replacingOccurrences(of: "\\E", with: "\\E\\\\E\\Q") + "\\E"
    }

    /// The text of a `^\Q…\E` pattern, or `nil` when the pattern is anything else.
    public static func unquotedPrefix(_ pattern: String) -> String? {
        guard pattern.hasPrefix("^\\Q"), pattern.hasSuffix("\\E"), pattern.count >= 5 else { return nil }
        let body = String(pattern.dropFirst(3).dropLast(2))
        let text = body.replacingOccurrences(of: "\\E\\\\E\\Q", with: "\\E")
        // Any other \E would end the quoting early: not a plain prefix.
        guard !text.replacingOccurrences(of: "\\E", with: "").contains("\\E"),
              quotedPrefix(text) == pattern else { return nil }
        return text
    }

    // MARK: Internals

    static func list(_ vs: [Value], _ key: String) throws(MBaaSError) -> [JSON] {
        var out: [JSON] = []
        for v in vs { out.append(try ParseCodec.encode(v, path: "where.\(key)")) }
        return out
    }

    static func flattenAnd(_ parts: [QueryPredicate]) -> [QueryPredicate] {
        parts.flatMap { p -> [QueryPredicate] in if case .and(let inner) = p { flattenAnd(inner) } else { [p] } }
    }

    static func flattenOr(_ parts: [QueryPredicate]) -> [QueryPredicate] {
        parts.flatMap { p -> [QueryPredicate] in if case .or(let inner) = p { flattenOr(inner) } else { [p] } }
    }

    /// Whether a JSON value is an operator object (`{"$gt":1}`), not a value.
    static func isOperatorObject(_ json: JSON) -> Bool {
        guard let o = json.objectValue, !o.isEmpty else { return false }
        return o.keys.allSatisfy { $0.hasPrefix("$") }
    }

    /// One object holding all conditions, or `nil` when two collide (same key with a bare value, or the same operator
    /// twice on a key, or two `$or`/`$nor`/`$and` groups).
    static func merge(_ objects: [JSONObject]) -> JSONObject? {
        var result = JSONObject()
        for object in objects {
            for (key, value) in object {
                guard let existing = result[key] else { result[key] = value; continue }
                guard !key.hasPrefix("$"), isOperatorObject(existing), isOperatorObject(value),
                      var a = existing.objectValue, let b = value.objectValue,
                      Set(a.keys).isDisjoint(with: b.keys) else { return nil }
                for (k, v) in b { a[k] = v }
                result[key] = .object(a)
            }
        }
        return result
    }
}
