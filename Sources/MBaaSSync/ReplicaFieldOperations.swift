import MBaaSCore

/// Applies field operations to the replica's copy of a record, and merges queued operations of one record without
/// turning an operation into a plain set.
enum ReplicaFieldOperations {
    /// The value after `op` (`nil`: the field is removed). Same meaning as the Local store's operations.
    static func apply(_ op: FieldOperation, to current: Value?, field: String) throws(MBaaSError) -> Value? {
        func array(_ name: String) throws(MBaaSError) -> [Value] {
            switch current {
            case nil, .null?: return []
            case .array(let items)?: return items
            case let other?: throw MBaaSError(.invalidRequest, "\(field): '\(name)' needs an array field, the field holds a \(other.typeName)")
            }
        }
        switch op {
        case .set(let v): return v
        case .delete: return nil
        case .increment(let amount):
            let base: Value = (current == nil || current == .null) ? .int(0) : current!
            switch (base, amount) {
            case (.int(let a), .int(let b)):
                let (sum, overflow) = a.addingReportingOverflow(b)
                if overflow { throw MBaaSError(.invalidRequest, "\(field): incrementing \(a) by \(b) overflows a 64-bit integer") }
                return .int(sum)
            case (.int, .double), (.double, .int), (.double, .double):
                return .double(base.doubleValue! + amount.doubleValue!)
            default:
                throw MBaaSError(.invalidRequest, "\(field): cannot increment a \(base.typeName) by a \(amount.typeName)")
            }
        case .add(let values): return .array(try array("add") + values)
        case .addUnique(let values):
            var items = try array("addUnique")
            for v in values where !items.contains(where: { $0.looselyEquals(v) }) { items.append(v) }
            return .array(items)
        case .remove(let values):
            return .array(try array("remove").filter { item in !values.contains(where: { $0.looselyEquals(item) }) })
        }
    }

    /// One operation with the effect of `first` then `second` on any server value, or `nil` when there is none
    /// (then both are sent). A set or delete absorbs whatever came before; an operation after a set folds into the
    /// set (the set already overwrites the server's value); increments add up; adds of the same kind concatenate.
    static func merge(_ first: FieldOperation, _ second: FieldOperation, field: String) -> FieldOperation? {
        switch (first, second) {
        case (_, .set), (_, .delete):
            return second
        case (.set(let v), _):
            do { return try apply(second, to: v, field: field).map(FieldOperation.set) ?? .delete } catch { return nil }
        case (.delete, _):
            do { return try apply(second, to: nil, field: field).map(FieldOperation.set) ?? .delete } catch { return nil }
        case (.increment(let a), .increment(let b)):
            guard let sum = try? apply(.increment(b), to: a, field: field) else { return nil }
            return .increment(sum)
        case (.add(let a), .add(let b)):
            return .add(a + b)
        case (.addUnique(let a), .addUnique(let b)):
            return .addUnique(a + b.filter { v in !a.contains(where: { $0.looselyEquals(v) }) })
        case (.remove(let a), .remove(let b)):
            return .remove(a + b)
        default:
            return nil
        }
    }

    /// The changes of `first` then `second` as one update, or `nil` when one field's operations do not combine.
    static func merge(_ first: [String: FieldOperation], _ second: [String: FieldOperation]) -> [String: FieldOperation]? {
        var out = first
        for (field, op) in second {
            if let earlier = out[field] {
                guard let merged = merge(earlier, op, field: field) else { return nil }
                out[field] = merged
            } else {
                out[field] = op
            }
        }
        return out
    }
}
