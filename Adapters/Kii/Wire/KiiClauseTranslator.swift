import Foundation
public import MBaaSCore

/// Translates the neutral query AST (``QueryPredicate``) into Kii clauses (kii.md §4.2). Pure.
///
/// | neutral | Kii clause |
/// |---|---|
/// | `eq` | `eq` |
/// | `lt` `lte` `gt` `gte` | `range` with one bound and its `…Included` flag |
/// | `in` | `in` (values grouped by JSON type, at most 200 per clause, several joined by `or`) |
/// | `exists(true)` | `or` of `hasField` for STRING, INTEGER, DECIMAL, BOOLEAN |
/// | `exists(false)` | only on an always-present key (where it matches nothing: refused), see below |
/// | `prefix` | `prefix` |
/// | `and` / `or` | `and` / `or` (an empty `and` is `all`) |
/// | `ne`, `nin`, `not` | `not(leaf)` on always-present keys only, see below |
///
/// **Negation is refused where it cannot be proven.** Kii's negation is three-valued: `notEquals` "does not match
/// if the specified field does not exist" ([doc] docs.kii.com JavaScript guide "Querying KiiObjects"; [sdk]
/// KiiCloudSDK-JS `KiiSDK.js` defines `notEquals` as `not(eq)`). The neutral language is two-valued (`ne` and `nin`
/// match records without the key), so `not(leaf)` alone would silently drop those records. Building the missing
/// half from `not(hasField)` would rest on an undocumented assumption: no vendor document, test or example shows
/// `not(hasField)` matching objects that lack the field, and if Kii's NOT of `hasField` is three-valued too it
/// matches nothing of the sort. So a negated leaf (`ne`, `nin`, `not`, the negation of `prefix`, `exists(false)`)
/// is translated only on keys every object has (`_id`, `_created`, `_modified`, `_version`), where `not(leaf)` is
/// exactly the two-valued negation; on any other key it is ``MBaaSError/Kind/unsupported``, naming the reason.
/// Negations are pushed through `and`/`or` by De Morgan, so each negated leaf is judged on its own key. The
/// adapter's capabilities therefore do not declare `ne`, `nin`, `not` or `exists`.
///
/// **Keys.** The neutral metadata keys map to Kii's reserved fields: `id` → `_id`, `createdAt` → `_created`,
/// `updatedAt` → `_modified`, `version` → `_version` (a `Date` compared with `createdAt`/`updatedAt` becomes epoch
/// milliseconds). Kii's own reserved names (`_owner`, ...) pass through. A dotted key is
/// ``MBaaSError/Kind/unsupported`` (Kii indexes top-level fields only, kii.md §3.1).
///
/// **Values.** Kii compares strings, numbers and booleans (kii.md §4.2). `Date`, `Bytes`, `Pointer`, `File`,
/// `GeoPoint`, arrays, objects and `null` in a user field are stored as JSON objects Kii does not index, so a
/// predicate comparing them is ``MBaaSError/Kind/unsupported`` rather than silently matching nothing.
/// `regex` and `containsAll` have no Kii clause and are `unsupported` too.
public enum KiiClauseTranslator {
    /// The most values one `in` clause may hold (kii.md §4.2).
    public static let maxInValues = 200

    /// The clause for a predicate (`all` for `nil`).
    public static func clause(for predicate: QueryPredicate?) throws(MBaaSError) -> KiiClause {
        guard let predicate else { return .all }
        return try positive(predicate)
    }

    /// The Kii field for a neutral key.
    public static func field(forKey key: String) throws(MBaaSError) -> String {
        switch key {
        case "id": return "_id"
        case "createdAt": return "_created"
        case "updatedAt": return "_modified"
        case "version": return "_version"
        default:
            if key.isEmpty { throw MBaaSError(.invalidRequest, "Kii query: empty field name") }
            if key.contains("."), !key.hasPrefix("_calculated.") {
                throw .unsupported("the nested key '\(key)'", by: "kii",
                                   reason: "Kii indexes and queries top-level fields only")
            }
            return key
        }
    }

    /// The `orderBy` field for a sort key (metadata keys mapped as for predicates).
    public static func orderBy(_ key: SortKey) throws(MBaaSError) -> (field: String, descending: Bool) {
        (try field(forKey: key.key), !key.ascending)
    }

    static let alwaysPresent: Set<String> = ["_id", "_created", "_modified", "_version"]
    static let allTypes: [KiiFieldType] = [.string, .integer, .decimal, .boolean]

    // MARK: Values

    /// A comparable scalar and the `hasField` types that can hold it.
    static func scalar(_ value: Value, field: String, op: String) throws(MBaaSError) -> (JSON, [KiiFieldType]) {
        switch value {
        case .int(let i): return (.int(i), [.integer, .decimal])
        case .double(let d): return (.double(d), [.integer, .decimal])
        case .string(let s): return (.string(s), [.string])
        case .bool(let b): return (.bool(b), [.boolean])
        case .date(let d) where field == "_created" || field == "_modified":
            return (.int(ISO8601.millis(d)), [.integer])
        default:
            throw .unsupported("'\(op)' on the \(value.typeName) value of '\(field)'", by: "kii",
                               reason: "Kii clauses compare strings, numbers and booleans only; other values are stored as JSON objects Kii does not index")
        }
    }

    // MARK: Positive form

    static func positive(_ p: QueryPredicate) throws(MBaaSError) -> KiiClause {
        switch p {
        case .compare(let key, let comparison, let value):
            let f = try field(forKey: key)
            let (v, _) = try scalar(value, field: f, op: comparison.rawValue)
            switch comparison {
            case .ne: return try negated(.compare(key, .eq, value))
            case .eq: return .eq(field: f, value: v)
            case .lt: return .range(field: f, lower: nil, upper: KiiRangeBound(try orderable(v, f), included: false))
            case .lte: return .range(field: f, lower: nil, upper: KiiRangeBound(try orderable(v, f), included: true))
            case .gt: return .range(field: f, lower: KiiRangeBound(try orderable(v, f), included: false), upper: nil)
            case .gte: return .range(field: f, lower: KiiRangeBound(try orderable(v, f), included: true), upper: nil)
            }
        case .in(let key, let values):
            return try inClause(key: key, values).clause
        case .notIn(let key, let values):
            return try negated(.in(key, values))
        case .exists(let key, let present):
            let f = try field(forKey: key)
            if alwaysPresent.contains(f) {
                guard present else {
                    throw .unsupported("'exists: false' on the always-present key '\(key)'", by: "kii",
                                       reason: "Kii has no clause that matches nothing")
                }
                return .all
            }
            guard present else {
                throw .unsupported("'exists: false' on '\(key)'", by: "kii", reason: negationNote)
            }
            return .or(allTypes.map { .hasField(field: f, type: $0) })
        case .prefix(let key, let prefix):
            return .prefix(field: try field(forKey: key), prefix: prefix)
        case .regex:
            throw .unsupported("the query operator 'regex'", by: "kii", reason: "Kii has no regular-expression clause")
        case .containsAll:
            throw .unsupported("the query operator 'containsAll'", by: "kii", reason: "Kii has no array clause")
        case .and(let parts):
            if parts.isEmpty { return .all }
            var out: [KiiClause] = []
            for part in parts { out.append(try positive(part)) }
            return out.count == 1 ? out[0] : .and(out)
        case .or(let parts):
            guard !parts.isEmpty else { throw MBaaSError(.invalidRequest, "Kii query: an 'or' needs at least one predicate") }
            var out: [KiiClause] = []
            for part in parts { out.append(try positive(part)) }
            return out.count == 1 ? out[0] : .or(out)
        case .not(let inner):
            return try negated(inner)
        }
    }

    // MARK: Negated form (two-valued where provable, see the type's documentation)

    static func negated(_ p: QueryPredicate) throws(MBaaSError) -> KiiClause {
        switch p {
        case .compare(let key, .ne, let value):
            return try positive(.compare(key, .eq, value))
        case .compare(let key, let comparison, let value):
            let f = try provableNegation(of: key, "'\(comparison == .eq ? "ne" : "not \(comparison.rawValue)")'")
            _ = try scalar(value, field: f, op: comparison.rawValue)
            return .not(try positive(p))
        case .in(let key, _):
            _ = try provableNegation(of: key, "'nin'")
            return .not(try positive(p))
        case .notIn(let key, let values):
            return try positive(.in(key, values))
        case .exists(let key, let present):
            return try positive(.exists(key, !present))
        case .prefix(let key, _):
            _ = try provableNegation(of: key, "'not prefix'")
            return .not(try positive(p))
        case .regex, .containsAll:
            return try positive(p)  // throws unsupported
        case .and(let parts):
            guard !parts.isEmpty else {
                throw .unsupported("'not' of an empty 'and'", by: "kii", reason: "Kii has no clause that matches nothing")
            }
            var out: [KiiClause] = []
            for part in parts { out.append(try negated(part)) }
            return out.count == 1 ? out[0] : .or(out)
        case .or(let parts):
            if parts.isEmpty { return .all }
            var out: [KiiClause] = []
            for part in parts { out.append(try negated(part)) }
            return out.count == 1 ? out[0] : .and(out)
        case .not(let inner):
            return try positive(inner)
        }
    }

    /// The reason a negation on a key that objects may lack is refused.
    public static let negationNote = "Kii's negation is three-valued (notEquals does not match objects without the "
        + "field, docs.kii.com querying guide) and no vendor evidence shows not(hasField) matching objects that "
        + "lack the field, so a negation that must match records without the key cannot be proven; it is refused"

    /// The Kii field of a key on which `not(leaf)` is the exact two-valued negation (a key every object has), or
    /// ``MBaaSError/Kind/unsupported``.
    static func provableNegation(of key: String, _ what: String) throws(MBaaSError) -> String {
        let f = try field(forKey: key)
        guard alwaysPresent.contains(f) else {
            throw .unsupported("\(what) on '\(key)'", by: "kii", reason: negationNote)
        }
        return f
    }

    static func orderable(_ v: JSON, _ field: String) throws(MBaaSError) -> JSON {
        if case .bool = v {
            throw .unsupported("ordering comparisons on the boolean value of '\(field)'", by: "kii",
                               reason: "Kii's range clause takes numbers and strings")
        }
        return v
    }

    /// `in`, with values grouped by JSON type (Kii requires the values to share the field's type) and split into
    /// clauses of at most ``maxInValues``.
    static func inClause(key: String, _ values: [Value]) throws(MBaaSError) -> (clause: KiiClause, types: [KiiFieldType]) {
        let f = try field(forKey: key)
        guard !values.isEmpty else {
            throw .unsupported("'in' with no values", by: "kii", reason: "Kii's in clause needs at least one value")
        }
        var groups: [(kind: Int, values: [JSON])] = []
        var types: [KiiFieldType] = []
        for value in values {
            let (v, t) = try scalar(value, field: f, op: "in")
            let kind = t == [.string] ? 0 : t == [.boolean] ? 1 : 2
            if let i = groups.firstIndex(where: { $0.kind == kind }) { groups[i].values.append(v) }
            else { groups.append((kind, [v])) }
            for type in t where !types.contains(type) { types.append(type) }
        }
        var clauses: [KiiClause] = []
        for group in groups {
            var start = 0
            while start < group.values.count {
                let end = min(start + maxInValues, group.values.count)
                clauses.append(.in(field: f, values: Array(group.values[start..<end])))
                start = end
            }
        }
        return (clauses.count == 1 ? clauses[0] : .or(clauses), types)
    }
}
