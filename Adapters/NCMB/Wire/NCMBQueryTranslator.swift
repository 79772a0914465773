import Foundation
public import MBaaSCore
import MBaaSParseFamilyWire

/// Translates a neutral ``Query`` into NCMB query parameters, or refuses it with
/// ``MBaaSError/Kind/unsupported`` naming what NCMB cannot express.
///
/// - Metadata keys take NCMB's names: `id` → `objectId`, `createdAt` → `createDate`, `updatedAt` → `updateDate`
///   (a Date compared with `createDate`/`updateDate` is sent as their plain ISO-8601 text);
///   on `_User`, `username` → `userName` and `email` → `mailAddress`. Values are NCMB JSON (dates as Date objects).
/// - `eq` is a bare value; `ne lt lte gt gte in nin exists` map to `$ne … $exists`; `containsAll` is `$all`;
///   `regex` is `$regex` (NCMB has no `$options`: a regex with options is refused); `prefix` is an anchored
///   `$regex` with the prefix's metacharacters escaped.
/// - `and` of conditions on distinct keys becomes one `where` object; several operators on one key merge into one
///   operator object when no operator repeats; at most one `or` group can sit beside them (`$or`). An `and` of two
///   `or` groups, a repeated operator on one key, equality plus another condition on the same key, and `not` are
///   refused (NCMB has no `$and`, `$nor` or `$not`).
/// - `or` becomes `$or` (nested `or`s are flattened).
/// - The sort becomes `order` (`-key` descending); with no sort NCMB's default `-createDate` applies. `limit` is
///   capped at 1000 (default 100). The cursor is the next `skip`, as a decimal string.
public enum NCMBQueryTranslator {
    /// The NCMB name of a neutral key for a class.
    public static func wireKey(_ key: String, className: String) -> String {
        switch key {
        case "id": return "objectId"
        case "createdAt": return "createDate"
        case "updatedAt": return "updateDate"
        case "username" where NCMBClassName(className) == .user: return "userName"
        case "email" where NCMBClassName(className) == .user: return "mailAddress"
        default: return key
        }
    }

    /// The `where` of a predicate.
    public static func `where`(_ predicate: QueryPredicate, className: String) throws(MBaaSError) -> NCMBWhere {
        switch predicate {
        case .and(let parts):
            var result = NCMBWhere()
            for part in flattenAnd(parts) {
                switch part {
                case .or:
                    guard result.or == nil else {
                        throw MBaaSError.unsupported("an 'and' of two 'or' groups", by: "ncmb",
                                                     reason: "NCMB has no $and; only one $or fits in a where object")
                    }
                    result.or = try `where`(part, className: className).or
                case .not:
                    throw notUnsupported
                case .and:
                    preconditionFailure("flattened")
                default:
                    let (key, constraint) = try condition(part, className: className)
                    try merge(key, constraint, into: &result)
                }
            }
            return result
        case .or(let parts):
            var children: [NCMBWhere] = []
            for part in flattenOr(parts) { children.append(try `where`(part, className: className)) }
            return NCMBWhere(or: children)
        case .not:
            throw notUnsupported
        default:
            let (key, constraint) = try condition(predicate, className: className)
            return NCMBWhere(entries: [NCMBWhere.Entry(key: key, constraint: constraint)])
        }
    }

    /// The NCMB parameters of a neutral query (not counting: see ``countQuery(_:)``).
    public static func translate(_ query: Query, capabilities: Capabilities) throws(MBaaSError) -> NCMBQuery {
        try query.validate(against: capabilities, backend: "ncmb")
        var out = NCMBQuery()
        if let p = query.predicate { out.where_ = try `where`(p, className: query.className) }
        out.order = query.sort.map { ($0.ascending ? "" : "-") + wireKey($0.key, className: query.className) }
        if let limit = query.limit { out.limit = min(limit, capabilities.maxPageSize) }
        out.skip = try startOffset(query)
        if out.skip == 0 { out.skip = nil }
        return out
    }

    /// `count=1&limit=1` with the query's `where` (limit, skip, cursor and order ignored): [sdk] ncmb_ios
    /// `NCMBQuery.m` and ncmb_android `NCMBQuery.java` send `limit=1` with `count=1`; ncmb_js `lib/query.js`
    /// refuses a limit below 1. The one record the answer carries is ignored.
    public static func countQuery(_ query: Query, capabilities: Capabilities) throws(MBaaSError) -> NCMBQuery {
        let q = query.forCounting
        var out = try translate(q, capabilities: capabilities)
        out.count = true
        out.limit = 1
        return out
    }

    /// Where a page starts: the cursor (a decimal offset) when given, else `skip`, else 0.
    public static func startOffset(_ query: Query) throws(MBaaSError) -> Int {
        if let cursor = query.cursor {
            guard let n = Int(cursor), n >= 0 else {
                throw MBaaSError(.invalidRequest, "cursor '\(cursor)' is not an NCMB cursor (a non-negative offset)")
            }
            return n
        }
        return query.skip ?? 0
    }

    /// Escapes regular-expression metacharacters so the text matches itself.
    public static func escapeRegex(_ text: String) -> String {
        var out = ""
        for ch in text {
            if "\\^$.|?*+()[]{}".contains(ch) { out.append("\\") }
            out.append(ch)
        }
        return out
    }

    // MARK: Internals

    private static var notUnsupported: MBaaSError {
        .unsupported("the query operator 'not'", by: "ncmb", reason: "NCMB has no $not or $nor")
    }

    private static func flattenAnd(_ parts: [QueryPredicate]) -> [QueryPredicate] {
        parts.flatMap { p -> [QueryPredicate] in if case .and(let inner) = p { flattenAnd(inner) } else { [p] } }
    }

    private static func flattenOr(_ parts: [QueryPredicate]) -> [QueryPredicate] {
        parts.flatMap { p -> [QueryPredicate] in if case .or(let inner) = p { flattenOr(inner) } else { [p] } }
    }

    private static func value(_ v: Value, key: String) throws(MBaaSError) -> JSON {
        let json = try NCMBCodec.encode(v, path: "where.\(key)")
        return json
    }

    private static func condition(_ p: QueryPredicate, className: String) throws(MBaaSError) -> (String, NCMBWhere.Constraint) {
        func list(_ vs: [Value], _ key: String) throws(MBaaSError) -> [JSON] {
            var out: [JSON] = []
            for v in vs { out.append(try value(v, key: key)) }
            return out
        }
        switch p {
        case .compare(let k, let c, let v):
            let key = wireKey(k, className: className)
            var operand = try value(v, key: k)
            // createDate and updateDate are plain ISO-8601 strings ([doc] ncmb.md §1.2), not Date objects: compare
            // them with the same fixed-width text, which orders chronologically ([inferred]).
            if key == "createDate" || key == "updateDate", case .date(let d) = v { operand = .string(ISO8601.format(d)) }
            switch c {
            case .eq:
                if let o = operand.objectValue, o.keys.contains(where: { $0.hasPrefix("$") }) {
                    throw MBaaSError(.invalidRequest, "where.\(k): an object value with '$' keys cannot be compared for equality in NCMB")
                }
                return (key, .equals(operand))
            case .ne: return (key, .operators([.ne(operand)]))
            case .lt: return (key, .operators([.lt(operand)]))
            case .lte: return (key, .operators([.lte(operand)]))
            case .gt: return (key, .operators([.gt(operand)]))
            case .gte: return (key, .operators([.gte(operand)]))
            }
        case .in(let k, let vs): return (wireKey(k, className: className), .operators([.in(try list(vs, k))]))
        case .notIn(let k, let vs): return (wireKey(k, className: className), .operators([.nin(try list(vs, k))]))
        case .containsAll(let k, let vs): return (wireKey(k, className: className), .operators([.all(try list(vs, k))]))
        case .exists(let k, let b): return (wireKey(k, className: className), .operators([.exists(b)]))
        case .prefix(let k, let s): return (wireKey(k, className: className), .operators([.regex("^" + escapeRegex(s))]))
        case .regex(let k, let pattern, let options):
            guard options.isEmpty else {
                throw MBaaSError.unsupported("regex options ('\(options)')", by: "ncmb", reason: "NCMB's $regex has no $options")
            }
            return (wireKey(k, className: className), .operators([.regex(pattern)]))
        case .and, .or, .not:
            preconditionFailure("not a field condition")
        }
    }

    private static func merge(_ key: String, _ constraint: NCMBWhere.Constraint, into w: inout NCMBWhere) throws(MBaaSError) {
        guard let index = w.entries.firstIndex(where: { $0.key == key }) else {
            w.entries.append(NCMBWhere.Entry(key: key, constraint: constraint))
            return
        }
        switch (w.entries[index].constraint, constraint) {
        case (.operators(let a), .operators(let b)):
            let names = Set(a.map(\.name))
            if let repeated = b.first(where: { names.contains($0.name) }) {
                throw MBaaSError.unsupported("two '\(repeated.name)' conditions on '\(key)' in one 'and'", by: "ncmb",
                                             reason: "NCMB has no $and; one key takes each operator once")
            }
            w.entries[index].constraint = .operators(a + b)
        case (.equals(let a), .equals(let b)) where a == b:
            return
        default:
            throw MBaaSError.unsupported("equality and another condition on '\(key)' in one 'and'", by: "ncmb",
                                         reason: "NCMB has no $and or $eq; equality is a bare value")
        }
    }
}
