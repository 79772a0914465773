public import Foundation
public import MBaaSCore

/// The neutral query ↔ SOQL, both ways.
///
/// Client direction (``soql(for:fields:)``):
///
/// | neutral | SOQL |
/// |---|---|
/// | `eq` `ne` `lt` `lte` `gt` `gte` | `=` `!=` `<` `<=` `>` `>=` |
/// | `in` / `nin` | `IN (…)` / `NOT IN (…)` |
/// | `exists(k, true)` / `exists(k, false)` | `k != null` / `k = null` |
/// | `and` / `or` / `not` | `AND` / `OR` (parenthesised when nested) / `NOT (…)` |
/// | `prefix`, `regex`, `containsAll` | refused, ``MBaaSError/Kind/unsupported`` (see ``SalesforceWire/capabilities``) |
///
/// Keys `id`, `createdAt`, `updatedAt` are `Id`, `CreatedDate`, `LastModifiedDate`; every other key is checked as an
/// identifier before anything is printed (``SalesforceWire/checkIdentifier(_:)``), so neither a key nor a value
/// can carry SOQL: values are printed only as literals (``SOQLValue/text``). Values: strings, numbers, booleans,
/// null, dates (datetime literals); other types are refused. Sort keys map the same way; `limit` and `skip` are
/// LIMIT and OFFSET (at most ``SalesforceWire/maxOffset``).
///
/// Server direction (``query(for:)``): the inverse, plus what the client never sends: `LIKE` becomes a `regex`
/// predicate, anchored, with the options `is` (LIKE ignores case [doc]); a date literal compares as midnight UTC.
public enum SOQLTranslator {
    /// The SOQL of a neutral query. `fields` is the selection when the query selects no keys (the client reads
    /// them from describe); `Id`, `CreatedDate` and `LastModifiedDate` are always selected.
    public static func soql(for query: Query, fields: [String]) throws(MBaaSError) -> SOQLQuery {
        try SalesforceWire.checkIdentifier(query.className)
        var selected: [String] = []
        var seen: Set<String> = []
        func add(_ f: String) {
            if seen.insert(f.lowercased()).inserted { selected.append(f) }
        }
        for f in ["Id", "CreatedDate", "LastModifiedDate"] { add(f) }
        for key in query.keys ?? fields {
            let f = SalesforceRecordCodec.field(forKey: key)
            try SalesforceWire.checkIdentifier(f)
            add(f)
        }
        var q = SOQLQuery(selection: .fields(selected), from: query.className)
        q.condition = try query.predicate.map { p throws(MBaaSError) in try condition(for: p) }
        for s in query.sort {
            let f = SalesforceRecordCodec.field(forKey: s.key)
            try SalesforceWire.checkIdentifier(f)
            // Nulls sort first ascending and last descending in SOQL [doc], as in the neutral order.
            q.orderBy.append(SOQLOrder(f, ascending: s.ascending))
        }
        q.limit = query.limit
        if let skip = query.skip, skip > 0 {
            guard skip <= SalesforceWire.maxOffset else {
                throw .unsupported("skip beyond \(SalesforceWire.maxOffset) (\(skip))", by: "salesforce",
                                   reason: "SOQL OFFSET is at most \(SalesforceWire.maxOffset); follow the cursor instead")
            }
            q.offset = skip
        }
        return q
    }

    /// `SELECT COUNT() FROM T [WHERE …]`.
    public static func countSOQL(for query: Query) throws(MBaaSError) -> SOQLQuery {
        try SalesforceWire.checkIdentifier(query.className)
        return SOQLQuery(selection: .count, from: query.className,
                         condition: try query.predicate.map { p throws(MBaaSError) in try condition(for: p) })
    }

    /// The SOQL condition of a neutral predicate.
    public static func condition(for p: QueryPredicate) throws(MBaaSError) -> SOQLCondition {
        func field(_ key: String) throws(MBaaSError) -> String {
            let f = SalesforceRecordCodec.field(forKey: key)
            try SalesforceWire.checkIdentifier(f)
            return f
        }
        switch p {
        case .compare(let k, let c, let v):
            let op: SOQLComparison = switch c {
            case .eq: .eq
            case .ne: .ne
            case .lt: .lt
            case .lte: .lte
            case .gt: .gt
            case .gte: .gte
            }
            return .compare(try field(k), op, try literal(v, key: k))
        case .in(let k, let vs):
            return .in(try field(k), try vs.map { v throws(MBaaSError) in try literal(v, key: k) })
        case .notIn(let k, let vs):
            return .notIn(try field(k), try vs.map { v throws(MBaaSError) in try literal(v, key: k) })
        case .exists(let k, let present):
            return .compare(try field(k), present ? .ne : .eq, .null)
        case .prefix:
            throw .unsupported("the query operator 'prefix'", by: "salesforce",
                               reason: SalesforceWire.capabilities.note(for: .operator(.prefix)))
        case .regex:
            throw .unsupported("the query operator 'regex'", by: "salesforce",
                               reason: SalesforceWire.capabilities.note(for: .operator(.regex)))
        case .containsAll:
            throw .unsupported("the query operator 'containsAll'", by: "salesforce",
                               reason: SalesforceWire.capabilities.note(for: .operator(.containsAll)))
        case .and(let ps):
            return .and(try ps.map { q throws(MBaaSError) in try condition(for: q) })
        case .or(let ps):
            return .or(try ps.map { q throws(MBaaSError) in try condition(for: q) })
        case .not(let q):
            return .not(try condition(for: q))
        }
    }

    /// A neutral value as a SOQL literal; `unsupported` for the types SOQL cannot compare here.
    public static func literal(_ v: Value, key: String) throws(MBaaSError) -> SOQLValue {
        switch v {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .double(let d):
            guard d.isFinite else { throw MBaaSError(.invalidRequest, "'\(key)': \(d) is not a number SOQL can compare") }
            return .double(d)
        case .string(let s): return .string(s)
        case .date(let d): return .dateTime(d)
        default:
            throw .unsupported("comparing \(v.typeName) values ('\(key)')", by: "salesforce",
                               reason: SalesforceWire.capabilities.note(for: .valueType(v.typeName)))
        }
    }

    // MARK: Server direction

    /// The neutral query of a parsed SOQL query (for `SELECT COUNT()`, use ``Query/forCounting``); `keys` is the
    /// selection without the system fields. Relationship paths (`Owner.Name`) are refused: INVALID_FIELD.
    public static func query(for soql: SOQLQuery) throws(MBaaSError) -> Query {
        var q = Query(soql.from)
        if case .fields(let fs) = soql.selection {
            var keys: [String] = []
            for f in fs {
                try checkServerField(f)
                let k = SalesforceRecordCodec.key(forField: f)
                if !["id", "createdAt", "updatedAt"].contains(k) { keys.append(k) }
            }
            q.keys = keys
        }
        q.predicate = try soql.condition.map { c throws(MBaaSError) in try predicate(for: c) }
        for o in soql.orderBy {
            try checkServerField(o.field)
            q.sort.append(SortKey(SalesforceRecordCodec.key(forField: o.field), ascending: o.ascending))
        }
        q.limit = soql.limit
        q.skip = soql.offset
        return q
    }

    static func checkServerField(_ f: String) throws(MBaaSError) {
        guard SalesforceWire.isIdentifier(f) else {
            throw MBaaSError(.invalidRequest, "No such column '\(f)' (relationship paths are not supported)",
                             vendorCode: "INVALID_FIELD", httpStatus: 400)
        }
    }

    /// The neutral predicate of a SOQL condition.
    public static func predicate(for c: SOQLCondition) throws(MBaaSError) -> QueryPredicate {
        switch c {
        case .compare(let f, let op, let v):
            try checkServerField(f)
            let k = SalesforceRecordCodec.key(forField: f)
            if v == .null, op == .eq { return .exists(k, false) }
            if v == .null, op == .ne { return .exists(k, true) }
            let cmp: QueryPredicate.Comparison = switch op {
            case .eq: .eq
            case .ne: .ne
            case .lt: .lt
            case .lte: .lte
            case .gt: .gt
            case .gte: .gte
            }
            return .compare(k, cmp, value(v))
        case .like(let f, let p):
            try checkServerField(f)
            return .regex(SalesforceRecordCodec.key(forField: f), p.regularExpression, options: "is")
        case .in(let f, let vs):
            try checkServerField(f)
            return .in(SalesforceRecordCodec.key(forField: f), vs.map(value))
        case .notIn(let f, let vs):
            try checkServerField(f)
            return .notIn(SalesforceRecordCodec.key(forField: f), vs.map(value))
        case .and(let cs): return .and(try cs.map { x throws(MBaaSError) in try predicate(for: x) })
        case .or(let cs): return .or(try cs.map { x throws(MBaaSError) in try predicate(for: x) })
        case .not(let x): return .not(try predicate(for: x))
        }
    }

    /// A SOQL literal as a neutral value.
    public static func value(_ v: SOQLValue) -> Value {
        switch v {
        case .null: .null
        case .bool(let b): .bool(b)
        case .int(let i): .int(i)
        case .double(let d): .double(d)
        case .string(let s): .string(s)
        case .date(let d), .dateTime(let d): .date(d)
        }
    }
}
