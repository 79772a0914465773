import Foundation
public import MBaaSCore
import MBaaSParseFamilyWire

/// The server direction of ``NCMBQueryTranslator``: an NCMB `where`, `order`, `limit`, `skip` read back into a
/// neutral ``Query``, for the subset the neutral query expresses.
///
/// - `objectId`, `createDate`, `updateDate` become `id`, `createdAt`, `updatedAt` (an ISO-8601 string compared
///   with the two dates is read as a date, which is how the client sends one); on the user class `userName` and
///   `mailAddress` become `username` and `email`.
/// - A bare value is `eq`; `$ne $lt $lte $gt $gte $in $nin $exists $regex $all` map to their neutral operators;
///   `$inArray`/`$ninArray` (array field holds any / none of the values) are `in`/`nin`, whose neutral meaning
///   covers array fields. Several operators on one key, and the entries beside a `$or`, are joined with `and`.
/// - `$inQuery`, `$select`, `$relatedTo`, `$nearSphere` and `$within` have no neutral form: they are
///   ``MBaaSError/Kind/unsupported`` naming the operator. A server resolves `$relatedTo` itself (see the
///   emulator's NCMB dialect) before translating the rest.
extension NCMBQueryTranslator {
    /// The neutral key of an NCMB key for a class.
    public static func neutralKey(_ key: String, className: String) -> String {
        switch key {
        case "objectId": return "id"
        case "createDate": return "createdAt"
        case "updateDate": return "updatedAt"
        case "userName" where NCMBClassName(className) == .user: return "username"
        case "mailAddress" where NCMBClassName(className) == .user: return "email"
        default: return key
        }
    }

    /// The predicate of a `where` (`nil` when it is empty). `relatedTo` must have been removed by the caller.
    public static func predicate(_ where_: NCMBWhere, className: String) throws(MBaaSError) -> QueryPredicate? {
        if where_.relatedTo != nil {
            throw MBaaSError.unsupported("$relatedTo", by: "the neutral query", reason: "relations are resolved by the server before translating")
        }
        var parts: [QueryPredicate] = []
        for entry in where_.entries {
            let key = neutralKey(entry.key, className: className)
            let isDate = key == "createdAt" || key == "updatedAt"
            func value(_ json: JSON) throws(MBaaSError) -> Value {
                if isDate, let s = json.stringValue, let d = ISO8601.parse(s) { return .date(d) }
                do { return try NCMBCodec.decode(json, path: "where.\(entry.key)") } catch {
                    throw MBaaSError(.invalidRequest, error.message, vendorCode: "E400002", httpStatus: 400)
                }
            }
            func values(_ list: [JSON]) throws(MBaaSError) -> [Value] {
                var out: [Value] = []
                for item in list { out.append(try value(item)) }
                return out
            }
            switch entry.constraint {
            case .equals(let json):
                parts.append(.compare(key, .eq, try value(json)))
            case .operators(let ops):
                for op in ops {
                    switch op {
                    case .ne(let v): parts.append(.compare(key, .ne, try value(v)))
                    case .lt(let v): parts.append(.compare(key, .lt, try value(v)))
                    case .lte(let v): parts.append(.compare(key, .lte, try value(v)))
                    case .gt(let v): parts.append(.compare(key, .gt, try value(v)))
                    case .gte(let v): parts.append(.compare(key, .gte, try value(v)))
                    case .in(let vs), .inArray(let vs): parts.append(.in(key, try values(vs)))
                    case .nin(let vs), .ninArray(let vs): parts.append(.notIn(key, try values(vs)))
                    case .all(let vs): parts.append(.containsAll(key, try values(vs)))
                    case .exists(let b): parts.append(.exists(key, b))
                    case .regex(let pattern): parts.append(.regex(key, pattern, options: ""))
                    case .inQuery, .select, .nearSphere, .maxDistanceInKilometers, .maxDistanceInMiles,
                         .maxDistanceInRadians, .withinBox:
                        throw MBaaSError.unsupported("the NCMB operator \(op.name)", by: "the neutral query",
                                                     reason: "subqueries and geo queries have no neutral form")
                    }
                }
            }
        }
        if let or = where_.or {
            var children: [QueryPredicate] = []
            for child in or {
                children.append(try predicate(child, className: className) ?? .and([]))
            }
            parts.append(.or(children))
        }
        switch parts.count {
        case 0: return nil
        case 1: return parts[0]
        default: return .and(parts)
        }
    }

    /// The neutral query of NCMB query parameters on a class (no cursor: NCMB pages by `skip`). A `limit` of 0
    /// (a count-only query) is kept as 0. The default order `-createDate` applies when none is given.
    public static func query(_ q: NCMBQuery, className: String) throws(MBaaSError) -> Query {
        var out = Query(className)
        if let w = q.where_ { out.predicate = try predicate(w, className: className) }
        let order = q.order.isEmpty ? NCMBQuery.defaultOrder : q.order
        out.sort = order.map { text in
            let descending = text.hasPrefix("-")
            return SortKey(neutralKey(descending ? String(text.dropFirst()) : text, className: className), ascending: !descending)
        }
        out.limit = q.limit ?? NCMBQuery.defaultLimit
        out.skip = q.skip
        return out
    }
}
