/// The neutral query JSON syntax, in the Mongo style.
///
/// ```json
/// {"money": {"$gte": 50, "$lt": 100}, "title": "rent",
///  "$or": [{"tag": {"$in": ["a", "b"]}}, {"note": {"$exists": false}}],
///  "$and": [...], "$not": {...}}
/// ```
///
/// - A bare value is equality (`{"title":"rent"}`); typed values use their neutral form
///   (`{"due":{"$lt":{"__type":"Date","iso":"..."}}}`).
/// - Field operators: `$eq $ne $lt $lte $gt $gte $in $nin $exists $prefix $regex` (with an optional sibling
///   `$options`) `$all` (contains all).
/// - Top-level operators: `$and` and `$or` take a non-empty array of query objects; `$not` takes one query object.
/// - Several members in one object are combined with `and`, in the order written.
///
/// Parsing then printing gives back the same AST (`QueryPredicate(json: p.json) == p`). Malformed input throws
/// ``MBaaSError/Kind/invalidRequest`` with the path and operator at fault, e.g. `where.money: unknown operator
/// '$gtx'`.
extension QueryPredicate {
    public init(json: JSON, path: String = "where") throws(MBaaSError) {
        guard let object = json.objectValue else {
            throw MBaaSError(.invalidRequest, "\(path): a query must be a JSON object, got \(json.printed())")
        }
        var parts: [QueryPredicate] = []
        for (key, value) in object {
            let here = "\(path).\(key)"
            switch key {
            case "$and", "$or":
                guard let items = value.arrayValue, !items.isEmpty else {
                    throw MBaaSError(.invalidRequest, "\(here): '\(key)' takes a non-empty array of queries")
                }
                var children: [QueryPredicate] = []
                for (i, item) in items.enumerated() { children.append(try QueryPredicate(json: item, path: "\(here)[\(i)]")) }
                parts.append(key == "$and" ? .and(children) : .or(children))
            case "$not":
                parts.append(.not(try QueryPredicate(json: value, path: here)))
            default:
                if key.hasPrefix("$") {
                    throw MBaaSError(.invalidRequest, "\(here): unknown top-level operator '\(key)' ($and, $or, $not)")
                }
                if key.isEmpty { throw MBaaSError(.invalidRequest, "\(path): empty field name") }
                parts.append(contentsOf: try QueryPredicate.fieldConditions(key: key, value, path: here))
            }
        }
        guard !parts.isEmpty else { throw MBaaSError(.invalidRequest, "\(path): empty query object") }
        self = parts.count == 1 ? parts[0] : .and(parts)
    }

    private static func fieldConditions(key: String, _ value: JSON, path: String) throws(MBaaSError) -> [QueryPredicate] {
        guard let ops = value.objectValue, let first = ops.keys.first, first.hasPrefix("$") else {
            return [.compare(key, .eq, try Value(json: value, path: path))]
        }
        if let plain = ops.keys.first(where: { !$0.hasPrefix("$") }) {
            throw MBaaSError(.invalidRequest, "\(path): '\(plain)' mixed with operators; use {\"$eq\":{...}} for an object value")
        }
        var result: [QueryPredicate] = []
        for (op, operand) in ops {
            let here = "\(path).\(op)"
            func list() throws(MBaaSError) -> [Value] {
                guard let items = operand.arrayValue else {
                    throw MBaaSError(.invalidRequest, "\(here): '\(op)' takes an array")
                }
                var values: [Value] = []
                for (i, item) in items.enumerated() { values.append(try Value(json: item, path: "\(here)[\(i)]")) }
                return values
            }
            func string() throws(MBaaSError) -> String {
                guard let s = operand.stringValue else { throw MBaaSError(.invalidRequest, "\(here): '\(op)' takes a string") }
                return s
            }
            switch op {
            case "$eq", "$ne", "$lt", "$lte", "$gt", "$gte":
                let comparison = Comparison(rawValue: String(op.dropFirst()))!
                if operand.arrayValue != nil, comparison != .eq, comparison != .ne {
                    throw MBaaSError(.invalidRequest, "\(here): '\(op)' cannot compare with an array")
                }
                result.append(.compare(key, comparison, try Value(json: operand, path: here)))
            case "$in": result.append(.in(key, try list()))
            case "$nin": result.append(.notIn(key, try list()))
            case "$all": result.append(.containsAll(key, try list()))
            case "$exists":
                guard let flag = operand.boolValue else { throw MBaaSError(.invalidRequest, "\(here): '$exists' takes true or false") }
                result.append(.exists(key, flag))
            case "$prefix": result.append(.prefix(key, try string()))
            case "$regex":
                let pattern = try string()
                var options = ""
                if let o = ops["$options"] {
                    guard let s = o.stringValue, s.allSatisfy({ "imsx".contains($0) }) else {
                        throw MBaaSError(.invalidRequest, "\(path).$options: takes a string of i, m, s, x")
                    }
                    options = s
                }
                result.append(.regex(key, pattern, options: options))
            case "$options":
                if ops["$regex"] == nil { throw MBaaSError(.invalidRequest, "\(here): '$options' without '$regex'") }
            default:
                throw MBaaSError(.invalidRequest, "\(here): unknown operator '\(op)'")
            }
        }
        return result
    }

    /// The neutral JSON form. `and` of conditions on distinct keys prints as one object; anything that would
    /// collide prints as `$and`.
    public var json: JSON {
        if case .and(let parts) = self, let merged = QueryPredicate.merge(parts) { return .object(merged) }
        switch self {
        case .and(let parts): return .object(["$and": .array(parts.map(\.json))])
        case .or(let parts): return .object(["$or": .array(parts.map(\.json))])
        case .not(let p): return .object(["$not": p.json])
        default:
            let (key, op) = fieldCondition!
            return .object(JSONObject([(key, op)]))
        }
    }

    /// `(key, {"$op": operand})` for a single field condition; equality on a non-object value prints bare.
    private var fieldCondition: (String, JSON)? {
        switch self {
        case .compare(let k, .eq, let v):
            if case .object = v.json, v.json["__type"] == nil { return (k, .object(["$eq": v.json])) }
            return (k, v.json)
        case .compare(let k, let c, let v): return (k, .object(JSONObject([("$" + c.rawValue, v.json)])))
        case .in(let k, let vs): return (k, .object(["$in": .array(vs.map(\.json))]))
        case .notIn(let k, let vs): return (k, .object(["$nin": .array(vs.map(\.json))]))
        case .containsAll(let k, let vs): return (k, .object(["$all": .array(vs.map(\.json))]))
        case .exists(let k, let b): return (k, .object(["$exists": .bool(b)]))
        case .prefix(let k, let p): return (k, .object(["$prefix": .string(p)]))
        case .regex(let k, let p, let o):
            var ops: JSONObject = ["$regex": .string(p)]
            if !o.isEmpty { ops["$options"] = .string(o) }
            return (k, .object(ops))
        case .and, .or, .not: return nil
        }
    }

    /// Merges an `and` list into one object when no key or operator repeats and each part is a field condition
    /// (or a single `$or`/`$not`), so that parsing the object gives back the same list in the same order.
    private static func merge(_ parts: [QueryPredicate]) -> JSONObject? {
        guard parts.count > 1 else { return nil }
        var object = JSONObject()
        var lastKey: String?
        for part in parts {
            switch part {
            case .or, .not:
                let key = part.json.objectValue!.keys[0]
                guard object[key] == nil else { return nil }
                object[key] = part.json[key]
                lastKey = key
            case .and:
                return nil
            default:
                let (key, condition) = part.fieldCondition!
                if let existing = object[key] {
                    // Several operators on one key merge only if consecutive, operator-form, and distinct.
                    guard lastKey == key, var ops = existing.objectValue, ops.keys.allSatisfy({ $0.hasPrefix("$") }),
                          let new = condition.objectValue, new.keys.allSatisfy({ $0.hasPrefix("$") && ops[$0] == nil }),
                          !new.keys.contains("$options"), ops["$regex"] == nil, new["$regex"] == nil
                    else { return nil }
                    for (op, v) in new { ops[op] = v }
                    object[key] = .object(ops)
                } else {
                    guard condition.objectValue.map({ $0.keys.allSatisfy { $0.hasPrefix("$") } }) ?? true
                            || condition["__type"] != nil
                    else { return nil }
                    object[key] = condition
                }
                lastKey = key
            }
        }
        return object
    }
}

extension Query {
    /// Parses the neutral query JSON text for the `where` clause of a query on a class.
    public static func parse(className: String, whereJSON text: String) throws(MBaaSError) -> Query {
        let json: JSON
        do { json = try JSON.parse(text) } catch { throw MBaaSError(.invalidRequest, "where: \(error)") }
        return Query(className, predicate: try QueryPredicate(json: json))
    }
}
