public import MBaaSCore

/// The rules the conformance suite enforces, for an adapter that keeps or filters records in memory (an example,
/// a cache, a file-backed store): class names, a neutral query's predicate evaluated on a record, and a stable
/// sort. System keys are keys like any other: `id`, `createdAt` and `updatedAt` are read from the record's
/// metadata (``value(of:in:)``), so `id == X`, `createdAt > T` or a sort by `updatedAt` match what a server
/// answers (a matcher that reads only `fields` silently matches nothing for them).
public enum InMemoryQuery {
    /// The system keys a query may name beside the record's fields.
    public static let systemKeys: Set<String> = ["id", "createdAt", "updatedAt"]

    /// Class names are `[A-Za-z][A-Za-z0-9_]*` (ASCII): anything else is ``MBaaSError/Kind/invalidRequest``
    /// naming it (the suite's `errors.invalidClassName` scenario sends spaces and punctuation).
    public static func validate(className: String) throws(MBaaSError) {
        guard let first = className.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic,
              className.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") })
        else { throw MBaaSError(.invalidRequest, "invalid class name '\(className)'") }
    }

    /// The value a query's key names on a record: `id` (a string), `createdAt` and `updatedAt` (dates) from the
    /// metadata, any other key from ``Record/fields``; `nil` when the record has none.
    public static func value(of key: String, in record: Record) -> Value? {
        switch key {
        case "id": record.id.map(Value.string)
        case "createdAt": record.createdAt.map(Value.date)
        case "updatedAt": record.updatedAt.map(Value.date)
        default: record.fields[key]
        }
    }

    /// Orders numbers, strings (by code point) and dates; `nil` for values that do not compare.
    public static func order(_ a: Value, _ b: Value) -> Int? {
        if let x = a.doubleValue, let y = b.doubleValue { return x < y ? -1 : x > y ? 1 : 0 }
        switch (a, b) {
        case (.string(let x), .string(let y)):
            let xs = x.unicodeScalars.map(\.value), ys = y.unicodeScalars.map(\.value)
            return xs == ys ? 0 : xs.lexicographicallyPrecedes(ys) ? -1 : 1
        case (.date(let x), .date(let y)): return x < y ? -1 : x > y ? 1 : 0
        default: return nil
        }
    }

    /// Whether `record` matches the predicate, as the core's query contract says: `ne` and `nin` also match a
    /// record without the key; `in` matches an array field holding any of the values; `regex` is not evaluated
    /// (declare it unsupported, or evaluate it yourself).
    public static func matches(_ p: QueryPredicate, _ r: Record) -> Bool {
        switch p {
        case .compare(let k, let c, let v):
            guard let field = value(of: k, in: r) else { return c == .ne }
            switch c {
            case .eq: return field.looselyEquals(v)
            case .ne: return !field.looselyEquals(v)
            case .lt: return order(field, v).map { $0 < 0 } ?? false
            case .lte: return order(field, v).map { $0 <= 0 } ?? false
            case .gt: return order(field, v).map { $0 > 0 } ?? false
            case .gte: return order(field, v).map { $0 >= 0 } ?? false
            }
        case .in(let k, let vs):
            guard let field = value(of: k, in: r) else { return false }
            let candidates = field.arrayValue ?? [field]
            return candidates.contains { c in vs.contains { c.looselyEquals($0) } }
        case .notIn(let k, let vs):
            guard let field = value(of: k, in: r) else { return true }
            return !vs.contains { field.looselyEquals($0) }
        case .exists(let k, let present): return (value(of: k, in: r).map { !$0.isNull } ?? false) == present
        case .prefix(let k, let s): return value(of: k, in: r)?.stringValue?.hasPrefix(s) ?? false
        case .regex: return false
        case .containsAll(let k, let vs):
            guard let items = value(of: k, in: r)?.arrayValue else { return false }
            return vs.allSatisfy { v in items.contains { $0.looselyEquals(v) } }
        case .and(let ps): return ps.allSatisfy { matches($0, r) }
        case .or(let ps): return ps.contains { matches($0, r) }
        case .not(let q): return !matches(q, r)
        }
    }

    /// Sorts by the keys (system keys included; missing values first), keeping the given order among equals.
    public static func stableSorted(_ records: [Record], by keys: [SortKey]) -> [Record] {
        records.enumerated().sorted { a, b in
            for key in keys {
                let x = value(of: key.key, in: a.element), y = value(of: key.key, in: b.element)
                let o: Int = switch (x, y) {
                case (nil, nil): 0
                case (nil, _): -1
                case (_, nil): 1
                case (let x?, let y?): order(x, y) ?? 0
                }
                if o != 0 { return key.ascending ? o < 0 : o > 0 }
            }
            return a.offset < b.offset
        }.map(\.element)
    }
}
