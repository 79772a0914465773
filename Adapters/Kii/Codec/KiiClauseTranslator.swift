import Foundation
import MBaaSCore

/// Translates the neutral query AST (``QueryPredicate``) into Kii clauses (kii.md §4.2). Pure.
///
/// | neutral | Kii clause |
/// |---|---|
/// | `eq` | `eq` |
/// | `lt` `lte` `gt` `gte` | `range` with one bound and its `…Included` flag |
/// | `in` | `in` (values grouped by JSON type, at most 200 per clause, several joined by `or`) |
/// | `exists(true)` | `or` of `hasField` for STRING, INTEGER, DECIMAL, BOOLEAN |
/// | `exists(false)` | `and` of `not hasField` for the four types |
/// | `prefix` | `prefix` |
/// | `and` / `or` | `and` / `or` (an empty `and` is `all`) |
/// | `ne`, `nin`, `not` | negation, see below |
///
/// **Negation.** Kii documents that `not(eq)` does *not* match objects that lack the field (kii.md §4.2, the SDKs'
/// `notEquals`): a leaf clause on a missing field is neither true nor false. The neutral language is two-valued
/// (`ne` and `nin` match records without the key), so a negated leaf is sent as
/// `or[not(leaf), not(hasField(key, T))…]` for the field types `T` the leaf can match, and negations are pushed
/// through `and`/`or` by De Morgan. Keys that are always present (`_id`, `_created`, `_modified`) need no such
/// branch.
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
            return present ? .or(allTypes.map { .hasField(field: f, type: $0) }) : absent(f, allTypes)
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

    // MARK: Negated form (two-valued, see the type's documentation)

    static func negated(_ p: QueryPredicate) throws(MBaaSError) -> KiiClause {
        switch p {
        case .compare(let key, .ne, let value):
            return try positive(.compare(key, .eq, value))
        case .compare(let key, let comparison, let value):
            let f = try field(forKey: key)
            let (_, types) = try scalar(value, field: f, op: comparison.rawValue)
            return orAbsent(.not(try positive(p)), field: f, types: types)
        case .in(let key, let values):
            let (clause, types) = try inClause(key: key, values)
            return orAbsent(.not(clause), field: try field(forKey: key), types: types)
        case .notIn(let key, let values):
            return try positive(.in(key, values))
        case .exists(let key, let present):
            return try positive(.exists(key, !present))
        case .prefix(let key, _):
            return orAbsent(.not(try positive(p)), field: try field(forKey: key), types: [.string])
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

    static func orAbsent(_ clause: KiiClause, field: String, types: [KiiFieldType]) -> KiiClause {
        alwaysPresent.contains(field) ? clause : .or([clause, absent(field, types)])
    }

    /// Matches objects where the field holds none of the given types (including objects without the field).
    static func absent(_ field: String, _ types: [KiiFieldType]) -> KiiClause {
        let parts = types.map { KiiClause.not(.hasField(field: field, type: $0)) }
        return parts.count == 1 ? parts[0] : .and(parts)
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
