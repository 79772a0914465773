import Foundation
public import MBaaSCore

/// The server direction of ``KiiClauseTranslator``: a Kii `QueryRequest` read back into the neutral ``Query``.
///
/// | Kii clause | neutral |
/// |---|---|
/// | `all` | no predicate |
/// | `eq` | `eq` |
/// | `range` | `gt`/`gte` and `lt`/`lte` (both bounds: an `and`) |
/// | `in` | `in` |
/// | `prefix` | `prefix` |
/// | `hasField` | `exists` (the `fieldType` is not checked: the neutral language has no type test) |
/// | `and` / `or` / `not` | `and` / `or` / `not` |
/// | `geobox`, `geodistance` | ``MBaaSError/Kind/unsupported`` (`QUERY_NOT_SUPPORTED`) |
///
/// Keys: `_id` → `id`, `_created` → `createdAt`, `_modified` → `updatedAt`, `_version` → `version` (epoch
/// milliseconds compared with `_created`/`_modified` become Dates); other keys stay. Values are read with
/// ``KiiObjectCodec/value(_:)``. `not` is the neutral, two-valued negation: where Kii's is three-valued (a `not`
/// over a key an object lacks), the two differ; the client only sends `not` on keys every object has.
extension KiiClauseTranslator {
    /// The neutral key of a Kii field (the inverse of ``field(forKey:)``).
    public static func key(forField field: String) -> String {
        switch field {
        case "_id": "id"
        case "_created": "createdAt"
        case "_modified": "updatedAt"
        case "_version": "version"
        default: field
        }
    }

    /// The neutral predicate of a clause; `nil` for `all`. Unsupported clauses throw ``MBaaSError/Kind/unsupported``
    /// with the vendor code `QUERY_NOT_SUPPORTED`.
    public static func predicate(for clause: KiiClause) throws(MBaaSError) -> QueryPredicate? {
        func value(_ json: JSON, _ key: String) -> Value {
            if key == "createdAt" || key == "updatedAt", let ms = json.doubleValue, json.boolValue == nil {
                return .date(Date(timeIntervalSince1970: ms / 1000))
            }
            if key == "version", let n = json.intValue { return .string(String(n)) }
            return KiiObjectCodec.value(json)
        }
        switch clause {
        case .all:
            return nil
        case .eq(let field, let v):
            let k = key(forField: field)
            return .compare(k, .eq, value(v, k))
        case .range(let field, let lower, let upper):
            let k = key(forField: field)
            var parts: [QueryPredicate] = []
            if let lower { parts.append(.compare(k, lower.included ? .gte : .gt, value(lower.limit, k))) }
            if let upper { parts.append(.compare(k, upper.included ? .lte : .lt, value(upper.limit, k))) }
            return parts.count == 1 ? parts[0] : .and(parts)
        case .in(let field, let values):
            let k = key(forField: field)
            return .in(k, values.map { value($0, k) })
        case .prefix(let field, let prefix):
            return .prefix(key(forField: field), prefix)
        case .hasField(let field, _):
            return .exists(key(forField: field), true)
        case .not(let inner):
            guard let p = try predicate(for: inner) else {
                throw MBaaSError(.unsupported, "not(all) matches nothing", vendorCode: "QUERY_NOT_SUPPORTED", httpStatus: 400)
            }
            return .not(p)
        case .and(let clauses):
            var parts: [QueryPredicate] = []
            for c in clauses { if let p = try predicate(for: c) { parts.append(p) } }
            return parts.isEmpty ? nil : parts.count == 1 ? parts[0] : .and(parts)
        case .or(let clauses):
            var parts: [QueryPredicate] = []
            for c in clauses {
                guard let p = try predicate(for: c) else { return nil }  // or(all, ...) is all
                parts.append(p)
            }
            return parts.count == 1 ? parts[0] : .or(parts)
        case .geoBox, .geoDistance:
            throw MBaaSError(.unsupported, "geo clauses are not supported here", vendorCode: "QUERY_NOT_SUPPORTED",
                             httpStatus: 400)
        }
    }

    /// The neutral query of a Kii `QueryRequest` on a class: the clause, `orderBy`/`descending` (default
    /// ascending, as the REST reference says, kii.md §4.1), `bestEffortLimit` capped at `maxLimit` (0 or over it
    /// means the server's maximum, kii.md §4.1) and `paginationKey` as the cursor.
    public static func query(_ request: KiiQueryRequest, className: String, maxLimit: Int) throws(MBaaSError) -> Query {
        var query = Query(className, predicate: try predicate(for: request.clause))
        if let orderBy = request.orderBy {
            query.sort = [SortKey(key(forField: orderBy), ascending: !(request.descending ?? false))]
        }
        let limit = request.bestEffortLimit ?? maxLimit
        query.limit = limit <= 0 || limit > maxLimit ? maxLimit : limit
        query.cursor = request.paginationKey
        return query
    }
}
