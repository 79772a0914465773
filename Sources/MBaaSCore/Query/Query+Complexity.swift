/// Limits on how complex a query may be, checked before a backend sees it.
///
/// SQL engines reject expressions past fixed limits (common embedded-engine defaults: an expression tree 1000
/// deep, a parser stack of 100, 2000 result columns, 32766 bound values) with errors that look like outages. These
/// limits are well below those, so a query that passes ``Query/validateComplexity(_:)`` never hits them, and one
/// that does not is ``MBaaSError/Kind/invalidRequest`` naming the limit (split the query, or use `$in` for many
/// values).
public struct QueryComplexityLimits: Sendable, Hashable {
    /// Clauses in one `$and` or `$or`.
    public var maxClauses: Int
    /// `$and`/`$or`/`$not` inside each other; a `$not` counts as two levels (it compiles to two nested calls).
    public var maxNesting: Int
    /// Sort keys.
    public var maxSortKeys: Int
    /// Values in all `$in`, `$nin` and `$all` lists together.
    public var maxValues: Int
    /// The estimated depth of the compiled expression (each `$and`/`$or` clause after the first adds one level,
    /// each leaf about eight, each non-scalar list value one).
    public var maxDepth: Int

    public init(maxClauses: Int = 500, maxNesting: Int = 16, maxSortKeys: Int = 32, maxValues: Int = 10_000,
                maxDepth: Int = 600) {
        self.maxClauses = maxClauses
        self.maxNesting = maxNesting
        self.maxSortKeys = maxSortKeys
        self.maxValues = maxValues
        self.maxDepth = maxDepth
    }

    /// The documented defaults: 500 clauses per `$and`/`$or`, 16 levels of nesting (`$not` counts two), 32 sort keys, 10,000
    /// list values, an estimated depth of 600.
    public static let `default` = QueryComplexityLimits()
}

extension Query {
    /// Throws ``MBaaSError/Kind/invalidRequest`` when the query exceeds `limits`, naming the limit. Backends
    /// whose query language has hard limits (an embedded SQL store) call it before compiling.
    public func validateComplexity(_ limits: QueryComplexityLimits = .default) throws(MBaaSError) {
        if sort.count > limits.maxSortKeys {
            throw MBaaSError(.invalidRequest, "order: \(sort.count) sort keys; at most \(limits.maxSortKeys)")
        }
        guard let predicate else { return }
        var values = 0
        let depth = try Self.measure(predicate, nesting: 0, limits: limits, values: &values)
        if values > limits.maxValues {
            throw MBaaSError(.invalidRequest, "where: \(values) values in $in/$nin/$all lists; at most \(limits.maxValues) in one query")
        }
        if depth > limits.maxDepth {
            throw MBaaSError(.invalidRequest, "where: the query is too complex (estimated depth \(depth); at most \(limits.maxDepth)); split it or use $in for many values")
        }
    }

    private static func measure(_ p: QueryPredicate, nesting: Int, limits: QueryComplexityLimits, values: inout Int)
        throws(MBaaSError) -> Int
    {
        let leaf = 8
        switch p {
        case .compare, .exists, .prefix, .regex:
            return leaf
        case .in(_, let vs), .notIn(_, let vs):
            values += vs.count
            return leaf + vs.filter { !$0.isScalarForLists }.count
        case .containsAll(_, let vs):
            values += vs.count
            return leaf + 2 * vs.count
        case .and(let ps), .or(let ps):
            let name = if case .and = p { "$and" } else { "$or" }
            if ps.count > limits.maxClauses {
                throw MBaaSError(.invalidRequest, "where: an \(name) has \(ps.count) clauses; at most \(limits.maxClauses) (split the query, or use $in for many values of one key)")
            }
            if nesting >= limits.maxNesting {
                throw MBaaSError(.invalidRequest, "where: $and/$or/$not nested more than \(limits.maxNesting) levels deep ($not counts as two)")
            }
            var deepest = 0
            for q in ps { deepest = max(deepest, try measure(q, nesting: nesting + 1, limits: limits, values: &values)) }
            return max(ps.count - 1, 0) + deepest + 1
        case .not(let q):
            if nesting + 1 >= limits.maxNesting {
                throw MBaaSError(.invalidRequest, "where: $and/$or/$not nested more than \(limits.maxNesting) levels deep ($not counts as two)")
            }
            return 2 + (try measure(q, nesting: nesting + 2, limits: limits, values: &values))
        }
    }
}

private extension Value {
    /// Numbers and strings go into one `IN (…)` list; other values cost a comparison each.
    var isScalarForLists: Bool {
        switch self {
        case .int, .double, .string: true
        default: false
        }
    }
}
