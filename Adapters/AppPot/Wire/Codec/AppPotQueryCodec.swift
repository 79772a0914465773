import Foundation
public import MBaaSCore

/// The JSON body of `POST data/query/{Class}` and `.../count` (reference A8):
///
/// ```json
/// {"from":{"phyName":"Task","alias":"Task"},
///  "where":{"expression":{"source":"( #Task.limit <= ? ) AND ( #Task.done = ? )","params":[5,1]}},
///  "orderBy":[{"column":"#Task.limit","type":"desc"}],
///  "range":{"limit":1000,"offset":1}}
/// ```
/// `range.offset` is 1-based on v2 and 0-based on v3 and v4 (see ``AppPotGeneration``). Joins are not produced by the adapter (the core query has none); a decoded body
/// keeps them out.
public struct AppPotQueryBody: Sendable, Hashable {
    public struct Order: Sendable, Hashable {
        /// `#Alias.column`.
        public var column: String
        public var descending: Bool
        public init(column: String, descending: Bool) {
            self.column = column
            self.descending = descending
        }
    }

    public var phyName: String
    public var alias: String
    /// The SQL-like expression with `#Alias.column` references and positional `?` placeholders.
    public var expression: String?
    public var params: [JSON]
    public var orderBy: [Order]
    public var limit: Int?
    /// As the generation counts it: v2 1-based (the first row is offset 1), v3 and v4 0-based.
    public var offset: Int?

    public init(phyName: String, alias: String? = nil, expression: String? = nil, params: [JSON] = [],
                orderBy: [Order] = [], limit: Int? = nil, offset: Int? = nil) {
        self.phyName = phyName
        self.alias = alias ?? phyName
        self.expression = expression
        self.params = params
        self.orderBy = orderBy
        self.limit = limit
        self.offset = offset
    }

    public var json: JSON {
        var o: JSONObject = ["from": .object(["phyName": .string(phyName), "alias": .string(alias)])]
        if let expression {
            o["where"] = .object(["expression": .object(["source": .string(expression), "params": .array(params)])])
        }
        if !orderBy.isEmpty {
            o["orderBy"] = .array(orderBy.map { .object(["column": .string($0.column), "type": .string($0.descending ? "desc" : "asc")]) })
        }
        if limit != nil || offset != nil {
            var r = JSONObject()
            if let limit { r["limit"] = .int(Int64(limit)) }
            if let offset { r["offset"] = .int(Int64(offset)) }
            o["range"] = .object(r)
        }
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let from = json["from"], let phy = from["phyName"]?.stringValue else {
            throw MBaaSError(.invalidRequest, "query body needs from.phyName", vendorCode: "198")
        }
        var orders: [Order] = []
        for o in json["orderBy"]?.arrayValue ?? [] {
            guard let c = o["column"]?.stringValue else {
                throw MBaaSError(.invalidRequest, "query body: orderBy entries need a column", vendorCode: "220")
            }
            orders.append(Order(column: c, descending: o["type"]?.stringValue?.lowercased() == "desc"))
        }
        let exp = json["where"]?["expression"]
        self.init(phyName: phy, alias: from["alias"]?.stringValue, expression: exp?["source"]?.stringValue,
                  params: exp?["params"]?.arrayValue ?? [], orderBy: orders,
                  limit: json["range"]?["limit"]?.intValue.map { Int($0) },
                  offset: json["range"]?["offset"]?.intValue.map { Int($0) })
    }
}

/// Translates the neutral query into AppPot's query JSON (pure).
///
/// - Keys: `id` is `objectId`, `createdAt` `serverCreateTime`, `updatedAt` `serverUpdateTime`; other keys are
///   columns (`[A-Za-z_][A-Za-z0-9_]*`; dotted keys are `unsupported`).
/// - `eq` `=`, `ne` `!=`, `lt` `<`, `lte` `<=`, `gt` `>`, `gte` `>=`, `exists` `IS [NOT] NULL`, `prefix`
///   `LIKE ?` with `%`, `_` and `\` escaped by `\`; `in` is expanded to an `OR` chain of `=` (as the JS SDK does),
///   `nin` to an `AND` chain of `!=`. `and`/`or` wrap every operand in parentheses and concatenate the
///   parameters in order. `not` is pushed down to the leaves (De Morgan), so no `NOT` is sent.
/// - SQL's `NULL` rules are compensated so the core's meaning holds: `ne`, `nin` and negated comparisons also
///   match rows where the column is `NULL` (the field is absent).
/// - Parts that can never match (an empty `in`, a value of another type than the column) fold away; a query
///   that can never match translates to `nil` (no request is needed).
/// - Values are converted by the class's schema (booleans `1`/`0`, dates epoch ms). Ordering comparisons and
///   sorting on `double` and `json` columns are `unsupported`: AppPot stores them as varchar, so the server would
///   compare text.
/// - Sorting always ends with `objectId` ascending, so equal sort keys keep a stable order across pages.
public enum AppPotQueryTranslator {
    /// The body of a page query: `skip` rows skipped (sent as `offset` the way the generation counts it), at
    /// most `limit`.
    public static func translate(_ query: Query, schema: AppPotClassSchema?, skip: Int, limit: Int,
                                 generation: AppPotGeneration = .v2) throws(MBaaSError) -> AppPotQueryBody? {
        try AppPotIdentifier.check(query.className, what: "class name")
        guard var body = try whereBody(query, schema: schema, generation: generation) else { return nil }
        body.orderBy = try order(query.sort, alias: query.className, schema: schema, generation: generation)
        body.limit = limit
        body.offset = generation.rangeOffset(skip: skip)
        return body
    }

    /// The body of a count query: `from` and `where` only.
    public static func translateCount(_ query: Query, schema: AppPotClassSchema?,
                                      generation: AppPotGeneration = .v2) throws(MBaaSError) -> AppPotQueryBody? {
        try AppPotIdentifier.check(query.className, what: "class name")
        return try whereBody(query, schema: schema, generation: generation)
    }

    private static func whereBody(_ query: Query, schema: AppPotClassSchema?, generation: AppPotGeneration) throws(MBaaSError) -> AppPotQueryBody? {
        var body = AppPotQueryBody(phyName: query.className)
        guard let predicate = query.predicate else { return body }
        switch try condition(predicate, negated: false, alias: query.className, schema: schema, generation: generation) {
        case .never: return nil
        case .always: return body
        case .sql(let source, let params):
            body.expression = source
            body.params = params
            return body
        }
    }

    /// The expression of a predicate: `nil` source when it always matches; throws nothing for never-matching
    /// predicates but returns `.never`.
    public static func expression(_ predicate: QueryPredicate, alias: String, schema: AppPotClassSchema?,
                                  generation: AppPotGeneration = .v2) throws(MBaaSError) -> Condition {
        try condition(predicate, negated: false, alias: alias, schema: schema, generation: generation)
    }

    /// A translated condition.
    public enum Condition: Sendable, Hashable {
        case always
        case never
        case sql(String, [JSON])
    }

    static func order(_ sort: [SortKey], alias: String, schema: AppPotClassSchema?,
                      generation: AppPotGeneration = .v2) throws(MBaaSError) -> [AppPotQueryBody.Order] {
        var orders: [AppPotQueryBody.Order] = []
        for key in sort {
            let (column, type) = try resolve(key.key, schema: schema)
            if let type, case .double = type, !generation.hasTypedColumns {
                throw MBaaSError.unsupported("sorting by the double field '\(key.key)'", by: "apppot",
                                             reason: "AppPot stores doubles as varchar, so the server would sort them as text")
            }
            if let type, case .json = type {
                throw MBaaSError.unsupported("sorting by the field '\(key.key)'", by: "apppot",
                                             reason: "it is stored as JSON text")
            }
            orders.append(.init(column: "#\(alias).\(column)", descending: !key.ascending))
        }
        if !orders.contains(where: { $0.column == "#\(alias).objectId" }) {
            orders.append(.init(column: "#\(alias).objectId", descending: false))
        }
        return orders
    }

    /// The column of a neutral key and its type when known (`nil` for system columns and unknown schemas).
    static func resolve(_ key: String, schema: AppPotClassSchema?) throws(MBaaSError) -> (String, AppPotColumnType?) {
        switch key {
        case "id": return ("objectId", nil)
        case "createdAt": return ("serverCreateTime", nil)
        case "updatedAt": return ("serverUpdateTime", nil)
        case "version", "acl", "class":
            throw MBaaSError(.invalidRequest, "AppPot queries cannot test '\(key)'")
        default:
            if key.contains(".") {
                throw MBaaSError.unsupported("the dotted key '\(key)'", by: "apppot", reason: "AppPot columns are flat")
            }
            try AppPotIdentifier.check(key, what: "query key")
            if AppPotClassSchema.systemColumns.contains(key) {
                throw MBaaSError(.invalidRequest, "'\(key)' is an AppPot system column; query id, createdAt or updatedAt")
            }
            return (key, schema?.columns[key])
        }
    }

    /// The parameter for a value compared with a column; `nil` when the value can never equal a value of the
    /// column (another type).
    static func param(_ value: Value, key: String, column: String, type: AppPotColumnType?,
                      generation: AppPotGeneration = .v2) -> JSON? {
        switch column {
        case "objectId": return value.stringValue.map(JSON.string)
        case "serverCreateTime", "serverUpdateTime":
            if case .date(let d) = value { return .string(ISO8601.format(d)) }
            return value.stringValue.map(JSON.string)
        default: break
        }
        guard let type else {
            // Unknown column type: numbers as JSON numbers so the server compares them numerically.
            if case .double(let d) = value { return .double(d) }
            return try? AppPotValueCodec.wire(value, column: nil, field: key)
        }
        if case .double = type, value.intValue != nil, case .int = value {
            return try? AppPotValueCodec.wire(.double(Double(value.intValue!)), column: type, field: key, generation: generation)
        }
        return try? AppPotValueCodec.wire(value, column: type, field: key, generation: generation)
    }

    private static func condition(_ p: QueryPredicate, negated: Bool, alias: String, schema: AppPotClassSchema?,
                                  generation: AppPotGeneration) throws(MBaaSError) -> Condition {
        switch p {
        case .and(let ps):
            return negated ? try or(ps, negated: true, alias: alias, schema: schema, generation: generation)
                           : try and(ps, negated: false, alias: alias, schema: schema, generation: generation)
        case .or(let ps):
            return negated ? try and(ps, negated: true, alias: alias, schema: schema, generation: generation)
                           : try or(ps, negated: false, alias: alias, schema: schema, generation: generation)
        case .not(let inner):
            return try condition(inner, negated: !negated, alias: alias, schema: schema, generation: generation)
        case .compare(let key, let cmp, let value):
            // Pointers, geo points, bytes, files, arrays and objects are kept as JSON text another client may
            // have written differently: comparing them would silently miss rows (query.value.* is not declared).
            switch value {
            case .pointer, .geoPoint, .bytes, .file, .array, .object:
                throw MBaaSError.unsupported("comparing \(value.typeName) values ('\(key)')", by: "apppot",
                                             reason: "AppPot keeps them as JSON text in a varchar column; text equality is not value equality")
            default: break
            }
            let (column, type) = try resolve(key, schema: schema)
            let c = "#\(alias).\(column)"
            let op: QueryPredicate.Comparison
            if negated {
                switch cmp {
                case .eq: op = .ne
                case .ne: op = .eq
                case .lt: op = .gte
                case .lte: op = .gt
                case .gt: op = .lte
                case .gte: op = .lt
                }
            } else {
                op = cmp
            }
            // An empty string is stored as NULL (see AppPotValueCodec.wire), so it compares as NULL.
            let isNull = value.isNull || param(value, key: key, column: column, type: type, generation: generation) == .null
            if isNull {
                switch op {
                case .eq: return .sql("\(c) IS NULL", [])
                case .ne: return .sql("\(c) IS NOT NULL", [])
                default: return negated ? .always : .never
                }
            }
            if cmp != .eq && cmp != .ne, let type {
                switch type {
                case .double where generation.hasTypedColumns: break
                case .double, .json, .decimal:
                    throw MBaaSError.unsupported("ordering comparisons on the field '\(key)'", by: "apppot",
                                                 reason: "AppPot stores \(type) values as varchar, so the server would compare text")
                default: break
                }
            }
            guard let param = param(value, key: key, column: column, type: type, generation: generation) else {
                // A value of another type never compares true; its negation always does.
                return op == .ne ? .always : .never
            }
            switch op {
            case .eq: return .sql("\(c) = ?", [param])
            case .ne: return .sql("( \(c) != ? OR \(c) IS NULL )", [param])
            case .lt, .lte, .gt, .gte:
                let sym = ["lt": "<", "lte": "<=", "gt": ">", "gte": ">="][op.rawValue]!
                return negated ? .sql("( \(c) \(sym) ? OR \(c) IS NULL )", [param]) : .sql("\(c) \(sym) ?", [param])
            }
        case .in(let key, let values):
            return try membership(key, values, positive: !negated, alias: alias, schema: schema, generation: generation)
        case .notIn(let key, let values):
            return try membership(key, values, positive: negated, alias: alias, schema: schema, generation: generation)
        case .exists(let key, let present):
            let (column, _) = try resolve(key, schema: schema)
            return .sql("#\(alias).\(column) IS \(present != negated ? "NOT " : "")NULL", [])
        case .prefix(let key, let prefix):
            let (column, type) = try resolve(key, schema: schema)
            let c = "#\(alias).\(column)"
            if let type {
                switch type {
                case .varchar, .text: break
                default: return negated ? .always : .never
                }
            }
            if prefix.isEmpty { return .sql("\(c) IS \(negated ? "" : "NOT ")NULL", []) }
            let pattern = JSON.string(escapeLike(prefix) + "%")
            return negated ? .sql("( \(c) NOT LIKE ? OR \(c) IS NULL )", [pattern]) : .sql("\(c) LIKE ?", [pattern])
        case .regex:
            throw MBaaSError.unsupported("the query operator 'regex'", by: "apppot", reason: AppPotWire.regexNote)
        case .containsAll:
            throw MBaaSError.unsupported("the query operator 'containsAll'", by: "apppot", reason: AppPotWire.containsAllNote)
        }
    }

    private static func membership(_ key: String, _ values: [Value], positive: Bool, alias: String, schema: AppPotClassSchema?, generation: AppPotGeneration) throws(MBaaSError) -> Condition {
        let (column, type) = try resolve(key, schema: schema)
        let c = "#\(alias).\(column)"
        var params: [JSON] = []
        var hasNull = false
        for v in values {
            if v.isNull || param(v, key: key, column: column, type: type, generation: generation) == .null { hasNull = true; continue }
            if let p = param(v, key: key, column: column, type: type, generation: generation), !params.contains(p) { params.append(p) }
        }
        if positive {
            var terms = params.map { _ in "\(c) = ?" }
            if hasNull { terms.append("\(c) IS NULL") }
            if terms.isEmpty { return .never }
            return .sql(terms.count == 1 ? terms[0] : "( " + terms.joined(separator: " OR ") + " )", params)
        }
        if params.isEmpty { return hasNull ? .sql("\(c) IS NOT NULL", []) : .always }
        let chain = params.map { _ in "\(c) != ?" }.joined(separator: " AND ")
        if hasNull { return .sql(params.count == 1 ? chain : "( \(chain) )", params) }
        return .sql("( \(params.count == 1 ? chain : "( \(chain) )") OR \(c) IS NULL )", params)
    }

    private static func and(_ ps: [QueryPredicate], negated: Bool, alias: String, schema: AppPotClassSchema?, generation: AppPotGeneration) throws(MBaaSError) -> Condition {
        var parts: [(String, [JSON])] = []
        for p in ps {
            switch try condition(p, negated: negated, alias: alias, schema: schema, generation: generation) {
            case .never: return .never
            case .always: continue
            case .sql(let s, let params): parts.append((s, params))
            }
        }
        return combine(parts, with: "AND", empty: .always)
    }

    private static func or(_ ps: [QueryPredicate], negated: Bool, alias: String, schema: AppPotClassSchema?, generation: AppPotGeneration) throws(MBaaSError) -> Condition {
        var parts: [(String, [JSON])] = []
        for p in ps {
            switch try condition(p, negated: negated, alias: alias, schema: schema, generation: generation) {
            case .always: return .always
            case .never: continue
            case .sql(let s, let params): parts.append((s, params))
            }
        }
        return combine(parts, with: "OR", empty: .never)
    }

    private static func combine(_ parts: [(String, [JSON])], with op: String, empty: Condition) -> Condition {
        if parts.isEmpty { return empty }
        if parts.count == 1 { return .sql(parts[0].0, parts[0].1) }
        return .sql(parts.map { "( \($0.0) )" }.joined(separator: " \(op) "), parts.flatMap(\.1))
    }

    /// Escapes `\`, `%` and `_` with `\` for a `LIKE` pattern.
    public static func escapeLike(_ s: String) -> String {
        var out = ""
        for ch in s {
            if ch == "\\" || ch == "%" || ch == "_" { out.append("\\") }
            out.append(ch)
        }
        return out
    }
}
