import Foundation
public import MBaaSCore
import MBaaSParseFamilyWire

/// The server direction of ``ParseQueryTranslator``: a Parse `where`, `order`, `limit`, `skip`, `keys` read back
/// into a neutral ``Query``, for what the neutral query expresses.
extension ParseQueryTranslator {
    /// Parse operators without a neutral form.
    public static let operatorsWithoutNeutralForm: Set<String> = [
        "$select", "$dontSelect", "$inQuery", "$notInQuery", "$relatedTo", "$text", "$nearSphere", "$within",
        "$geoWithin", "$geoIntersects", "$maxDistance", "$maxDistanceInRadians", "$maxDistanceInKilometers",
        "$maxDistanceInMiles", "$containedBy", "$centerSphere", "$box", "$polygon", "$point", "$containedIn",
    ]

    static func noNeutralForm(_ op: String) -> MBaaSError {
        MBaaSError.unsupported("the Parse operator \(op)", by: "the neutral query",
                               reason: "subqueries, relations, text and geo queries have no neutral form")
    }

    /// The predicate of a `where` (`nil` when it is empty).
    public static func predicate(_ where_: JSONObject) throws(MBaaSError) -> QueryPredicate? {
        var parts: [QueryPredicate] = []
        func children(_ key: String, _ value: JSON) throws(MBaaSError) -> [QueryPredicate] {
            guard let items = value.arrayValue else {
                throw MBaaSError(.invalidRequest, "\(key) must be an array of where objects", vendorCode: "102", httpStatus: 400)
            }
            var out: [QueryPredicate] = []
            for item in items {
                guard let o = item.objectValue else {
                    throw MBaaSError(.invalidRequest, "\(key) must be an array of where objects", vendorCode: "102", httpStatus: 400)
                }
                out.append(try predicate(o) ?? .and([]))
            }
            return out
        }
        for (wire, value) in where_ {
            switch wire {
            case "$or": parts.append(.or(try children(wire, value)))
            case "$and": parts.append(.and(try children(wire, value)))
            case "$nor":
                let ps = try children(wire, value)
                parts.append(.not(ps.count == 1 ? ps[0] : .or(ps)))
            default:
                if wire.hasPrefix("$") { throw noNeutralForm(wire) }
                let key = neutralKey(wire)
                func decode(_ json: JSON) throws(MBaaSError) -> Value {
                    do { return try ParseCodec.decode(json, path: "where.\(wire)") } catch {
                        throw MBaaSError(.invalidRequest, error.message, vendorCode: "102", httpStatus: 400)
                    }
                }
                func decodeList(_ op: String, _ json: JSON) throws(MBaaSError) -> [Value] {
                    guard let items = json.arrayValue else {
                        throw MBaaSError(.invalidRequest, "bad \(op) value on '\(wire)'", vendorCode: "102", httpStatus: 400)
                    }
                    var out: [Value] = []
                    for item in items { out.append(try decode(item)) }
                    return out
                }
                guard let ops = value.objectValue, ops.keys.contains(where: { $0.hasPrefix("$") }) else {
                    parts.append(.compare(key, .eq, try decode(value)))
                    continue
                }
                guard ops.keys.allSatisfy({ $0.hasPrefix("$") }) else {
                    throw MBaaSError(.invalidRequest, "'\(wire)' mixes operators and plain keys", vendorCode: "102", httpStatus: 400)
                }
                for (op, operand) in ops {
                    switch op {
                    case "$eq": parts.append(.compare(key, .eq, try decode(operand)))
                    case "$ne": parts.append(.compare(key, .ne, try decode(operand)))
                    case "$lt": parts.append(.compare(key, .lt, try decode(operand)))
                    case "$lte": parts.append(.compare(key, .lte, try decode(operand)))
                    case "$gt": parts.append(.compare(key, .gt, try decode(operand)))
                    case "$gte": parts.append(.compare(key, .gte, try decode(operand)))
                    case "$in": parts.append(.in(key, try decodeList(op, operand)))
                    case "$nin": parts.append(.notIn(key, try decodeList(op, operand)))
                    case "$all": parts.append(.containsAll(key, try decodeList(op, operand)))
                    case "$exists":
                        guard let b = operand.boolValue else {
                            throw MBaaSError(.invalidRequest, "bad $exists value on '\(wire)'", vendorCode: "102", httpStatus: 400)
                        }
                        parts.append(.exists(key, b))
                    case "$regex":
                        guard let pattern = operand.stringValue else {
                            throw MBaaSError(.invalidRequest, "bad $regex value on '\(wire)'", vendorCode: "102", httpStatus: 400)
                        }
                        let options = ops["$options"]?.stringValue ?? ""
                        if options.isEmpty, let text = unquotedPrefix(pattern) {
                            parts.append(.prefix(key, text))
                        } else {
                            parts.append(.regex(key, pattern, options: options))
                        }
                    case "$options":
                        guard ops["$regex"] != nil else {
                            throw MBaaSError(.invalidRequest, "$options without $regex on '\(wire)'", vendorCode: "102", httpStatus: 400)
                        }
                    default:
                        if operatorsWithoutNeutralForm.contains(op) { throw noNeutralForm(op) }
                        throw MBaaSError(.invalidRequest, "bad constraint: \(op)", vendorCode: "102", httpStatus: 400)
                    }
                }
            }
        }
        switch parts.count {
        case 0: return nil
        case 1: return parts[0]
        default: return .and(parts)
        }
    }

    /// The neutral query of Parse find parameters on a class. `limit` defaults to 100; `excludeKeys` and `include`
    /// have no neutral form and are refused (unsupported).
    public static func query(_ q: ParseQuery, className: String) throws(MBaaSError) -> Query {
        if q.excludeKeys != nil { throw MBaaSError.unsupported("excludeKeys", by: "the neutral query") }
        if q.include != nil { throw MBaaSError.unsupported("include", by: "the neutral query") }
        var out = Query(className)
        if let w = q.where_ { out.predicate = try predicate(w) }
        out.sort = q.order.map { text in
            let descending = text.hasPrefix("-")
            return SortKey(neutralKey(descending ? String(text.dropFirst()) : text), ascending: !descending)
        }
        out.limit = q.limit ?? ParseWire.defaultLimit
        out.skip = q.skip
        out.keys = q.keys?.map(neutralKey)
        return out
    }
}
