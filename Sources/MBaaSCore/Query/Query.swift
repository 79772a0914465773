import Foundation

/// A comparison or set operator of the neutral query language, as adapters declare them in ``Capabilities``.
public enum QueryOperator: String, Sendable, Hashable, Codable, CaseIterable {
    case eq, ne, lt, lte, gt, gte
    case `in`, nin, exists, prefix, regex, containsAll
    case and, or, not
}

/// A backend-neutral filter.
///
/// Build one with the operators on ``Field`` (`Field("money") >= 50 && Field("title").hasPrefix("a")`), or parse
/// it from the neutral JSON syntax with ``QueryPredicate/init(json:)``. Keys may be dotted paths into object fields
/// where the backend supports it. The meaning of each case is the one a SQL or Mongo user expects:
/// - `eq`/`ne` compare by value (numbers by numeric value); `ne` and `nin` also match records without the key.
/// - `lt`...`gte` order numbers, strings (by code point) and dates; values of other types never match.
/// - `in`/`nin` test membership; on an array field, `in` matches when any element is a member.
/// - `exists(key, true)` matches when the key is present and not null.
/// - `prefix` is a case-sensitive string prefix; `regex` an ICU/PCRE-style pattern with options `i`, `m`, `s`.
/// - `containsAll` matches array fields holding every given value.
public indirect enum QueryPredicate: Sendable, Hashable {
    case compare(String, Comparison, Value)
    case `in`(String, [Value])
    case notIn(String, [Value])
    case exists(String, Bool)
    case prefix(String, String)
    case regex(String, String, options: String)
    case containsAll(String, [Value])
    case and([QueryPredicate])
    case or([QueryPredicate])
    case not(QueryPredicate)

    /// The six comparisons.
    public enum Comparison: String, Sendable, Hashable, CaseIterable {
        case eq, ne, lt, lte, gt, gte
        var queryOperator: QueryOperator { QueryOperator(rawValue: rawValue)! }
    }

    /// Every operator this predicate uses, for checking it against ``Capabilities/operators``.
    public var operators: Set<QueryOperator> {
        switch self {
        case .compare(_, let c, _): [c.queryOperator]
        case .in: [.in]
        case .notIn: [.nin]
        case .exists: [.exists]
        case .prefix: [.prefix]
        case .regex: [.regex]
        case .containsAll: [.containsAll]
        case .and(let ps): ps.reduce(into: [.and]) { $0.formUnion($1.operators) }
        case .or(let ps): ps.reduce(into: [.or]) { $0.formUnion($1.operators) }
        case .not(let p): p.operators.union([.not])
        }
    }

    /// Every key the predicate tests.
    public var keys: Set<String> {
        switch self {
        case .compare(let k, _, _), .in(let k, _), .notIn(let k, _), .exists(let k, _), .prefix(let k, _),
            .regex(let k, _, _), .containsAll(let k, _):
            [k]
        case .and(let ps), .or(let ps): ps.reduce(into: []) { $0.formUnion($1.keys) }
        case .not(let p): p.keys
        }
    }

    public static func && (lhs: QueryPredicate, rhs: QueryPredicate) -> QueryPredicate {
        switch (lhs, rhs) {
        case (.and(let a), .and(let b)): .and(a + b)
        case (.and(let a), _): .and(a + [rhs])
        case (_, .and(let b)): .and([lhs] + b)
        default: .and([lhs, rhs])
        }
    }

    public static func || (lhs: QueryPredicate, rhs: QueryPredicate) -> QueryPredicate {
        switch (lhs, rhs) {
        case (.or(let a), .or(let b)): .or(a + b)
        case (.or(let a), _): .or(a + [rhs])
        case (_, .or(let b)): .or([lhs] + b)
        default: .or([lhs, rhs])
        }
    }

    public static prefix func ! (p: QueryPredicate) -> QueryPredicate { .not(p) }
}

/// A key of a record, for building predicates fluently: `Field("money") >= 50`.
public struct Field: Sendable, Hashable {
    public var key: String
    public init(_ key: String) { self.key = key }

    public static func == (f: Field, v: Value) -> QueryPredicate { .compare(f.key, .eq, v) }
    public static func != (f: Field, v: Value) -> QueryPredicate { .compare(f.key, .ne, v) }
    public static func < (f: Field, v: Value) -> QueryPredicate { .compare(f.key, .lt, v) }
    public static func <= (f: Field, v: Value) -> QueryPredicate { .compare(f.key, .lte, v) }
    public static func > (f: Field, v: Value) -> QueryPredicate { .compare(f.key, .gt, v) }
    public static func >= (f: Field, v: Value) -> QueryPredicate { .compare(f.key, .gte, v) }

    public func isIn(_ values: [Value]) -> QueryPredicate { .in(key, values) }
    public func notIn(_ values: [Value]) -> QueryPredicate { .notIn(key, values) }
    public func exists(_ present: Bool = true) -> QueryPredicate { .exists(key, present) }
    public func hasPrefix(_ prefix: String) -> QueryPredicate { .prefix(key, prefix) }
    public func matches(_ pattern: String, options: String = "") -> QueryPredicate { .regex(key, pattern, options: options) }
    public func containsAll(_ values: [Value]) -> QueryPredicate { .containsAll(key, values) }
}

/// One sort key: `money` ascending, `-money` descending.
public struct SortKey: Sendable, Hashable, CustomStringConvertible {
    public var key: String
    public var ascending: Bool
    public init(_ key: String, ascending: Bool = true) {
        self.key = key
        self.ascending = ascending
    }

    /// Parses `money` or `-money`.
    public init(parsing text: String) {
        if text.hasPrefix("-") { self.init(String(text.dropFirst()), ascending: false) }
        else { self.init(text.hasPrefix("+") ? String(text.dropFirst()) : text, ascending: true) }
    }

    /// Parses a comma-separated list, refusing what names no field: an empty key (`','`, `',,,'`, a trailing
    /// comma), a bare `-` or `+`, a key starting with `$` (operators) or holding control characters.
    /// `invalidRequest` names the key (the caller prefixes the option).
    public static func strictList(_ text: String) throws(MBaaSError) -> [SortKey] {
        var keys: [SortKey] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let item = part.trimmingCharacters(in: .whitespaces)
            guard !item.isEmpty else {
                throw MBaaSError(.invalidRequest, "'\(text)' has an empty sort key; give field names separated by commas, '-' for descending: -money,title")
            }
            let key = SortKey(parsing: item)
            try checkFieldPath(key.key, in: item)
            keys.append(key)
        }
        return keys
    }

    /// A field name as a sort key or a selected key takes it: not empty, no leading `$`, `-` or `+`, no control
    /// characters.
    public static func checkFieldPath(_ key: String, in item: String) throws(MBaaSError) {
        guard !key.isEmpty else {
            throw MBaaSError(.invalidRequest, "'\(item)' names no field (write -money for descending)")
        }
        guard let first = key.first, first != "$", first != "-", first != "+",
              !key.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw MBaaSError(.invalidRequest, "'\(item)' is not a field name (no leading '$', '-' or '+', no control characters)")
        }
    }

    /// Parses a comma-separated list: `-money,title` (empty keys are skipped; ``strictList(_:)`` refuses them).
    public static func list(_ text: String) -> [SortKey] {
        text.split(separator: ",").map { SortKey(parsing: $0.trimmingCharacters(in: .whitespaces)) }
            .filter { !$0.key.isEmpty }
    }

    public var description: String { ascending ? key : "-" + key }
}

/// A backend-neutral query: which class, which records, in which order, which page.
///
/// ```swift
/// let q = Query("Memo").filter(Field("money") >= 50).sorted("-money", "title").limit(10)
/// let page = try await backend.queryPage(q)
/// for try await memo in backend.records(matching: q) { ... }
/// ```
public struct Query: Sendable, Hashable {
    public var className: String
    public var predicate: QueryPredicate?
    public var sort: [SortKey]
    /// At most this many records (for ``ObjectStore/queryPage(_:)``: the page size).
    public var limit: Int?
    /// Records to skip before the first one returned.
    public var skip: Int?
    /// An opaque continuation token from a previous ``RecordPage/nextCursor``.
    public var cursor: String?
    /// Fields to return (all when `nil`); metadata is always returned.
    public var keys: [String]?

    public init(
        _ className: String, predicate: QueryPredicate? = nil, sort: [SortKey] = [], limit: Int? = nil, skip: Int? = nil,
        cursor: String? = nil, keys: [String]? = nil
    ) {
        self.className = className
        self.predicate = predicate
        self.sort = sort
        self.limit = limit
        self.skip = skip
        self.cursor = cursor
        self.keys = keys
    }

    /// Adds a predicate (combined with `and` with any existing one).
    public func filter(_ p: QueryPredicate) -> Query {
        var q = self
        q.predicate = predicate.map { $0 && p } ?? p
        return q
    }

    /// Replaces the sort order; `"-money"` sorts descending.
    public func sorted(_ keys: String...) -> Query {
        var q = self
        q.sort = keys.map(SortKey.init(parsing:))
        return q
    }

    public func sorted(by keys: [SortKey]) -> Query {
        var q = self
        q.sort = keys
        return q
    }

    public func limit(_ n: Int?) -> Query {
        var q = self
        q.limit = n
        return q
    }

    public func skip(_ n: Int?) -> Query {
        var q = self
        q.skip = n
        return q
    }

    public func select(_ keys: [String]?) -> Query {
        var q = self
        q.keys = keys
        return q
    }

    /// The query as ``ObjectStore/count(_:)`` reads it: the same class and predicate, without limit, skip,
    /// cursor, sort or selected keys (none of which changes how many records match).
    public var forCounting: Query { Query(className, predicate: predicate) }

    /// Throws ``MBaaSError/Kind/invalidRequest`` for negative limits or skips, and
    /// ``MBaaSError/Kind/unsupported`` for anything the capabilities do not allow, naming it: an operator, a dotted
    /// key without ``Capabilities/Feature/nestedKeys``, a Date, Pointer, GeoPoint, Bytes or File operand without
    /// its ``Capabilities/Feature/queryValue(_:)`` (`id`, `createdAt` and `updatedAt` always compare), several
    /// sort keys, skip, selected keys.
    public func validate(against capabilities: Capabilities, backend: String) throws(MBaaSError) {
        if let limit, limit < 0 { throw MBaaSError(.invalidRequest, "limit must be >= 0, got \(limit)") }
        if let skip, skip < 0 { throw MBaaSError(.invalidRequest, "skip must be >= 0, got \(skip)") }
        if let predicate {
            let missing = predicate.operators.subtracting(capabilities.operators)
            if let op = missing.sorted(by: { $0.rawValue < $1.rawValue }).first {
                throw .unsupported("the query operator '\(op.rawValue)'", by: backend,
                                   reason: capabilities.note(for: .operator(op)))
            }
        }
        if let predicate {
            if !capabilities.has(.nestedKeys), let key = predicate.keys.sorted().first(where: { $0.contains(".") }) {
                throw .unsupported("the dotted key '\(key)'", by: backend, reason: capabilities.note(for: .nestedKeys))
            }
            // Comparing typed values needs query.value.<Type>; the metadata keys compare on every backend.
            for (key, value) in Query.operands(of: predicate) where !["id", "createdAt", "updatedAt"].contains(key) {
                switch value {
                case .date, .pointer, .geoPoint, .bytes, .file:
                    let feature = Capabilities.Feature.queryValue(value.typeName)
                    if !capabilities.has(feature) {
                        throw .unsupported("comparing \(value.typeName) values ('\(key)')", by: backend,
                                           reason: capabilities.note(for: feature))
                    }
                default: break
                }
            }
        }
        if sort.count > 1, !capabilities.has(.multiKeySort) {
            throw .unsupported("sorting by more than one key", by: backend, reason: capabilities.note(for: .multiKeySort))
        }
        if let skip, skip > 0, !capabilities.has(.skip) {
            throw .unsupported("skip", by: backend, reason: capabilities.note(for: .skip))
        }
        if keys != nil, !capabilities.has(.selectKeys) {
            throw .unsupported("selecting keys", by: backend, reason: capabilities.note(for: .selectKeys))
        }
    }

    /// Every (key, operand) a predicate compares.
    static func operands(of p: QueryPredicate) -> [(String, Value)] {
        switch p {
        case .compare(let k, _, let v): [(k, v)]
        case .in(let k, let vs), .notIn(let k, let vs), .containsAll(let k, let vs): vs.map { (k, $0) }
        case .exists, .prefix, .regex: []
        case .and(let ps), .or(let ps): ps.flatMap(operands)
        case .not(let q): operands(of: q)
        }
    }
}
