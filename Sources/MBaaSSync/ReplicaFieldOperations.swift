import MBaaSCore

/// Merges queued operations of one record without turning an operation into a plain set (the replica applies them to
/// its copy with the core's ``MBaaSCore/FieldOperation/applied(to:field:)``, the meaning the Local store has).
enum ReplicaFieldOperations {
    /// One operation with the effect of `first` then `second` on any server value, or `nil` when there is none
    /// (then both are sent). A set or delete absorbs whatever came before; an operation after a set folds into the
    /// set (the set already overwrites the server's value); increments add up; adds of the same kind concatenate.
    static func merge(_ first: FieldOperation, _ second: FieldOperation, field: String) -> FieldOperation? {
        switch (first, second) {
        case (_, .set), (_, .delete):
            return second
        case (.set(let v), _):
            do { return try second.applied(to: v, field: field).map(FieldOperation.set) ?? .delete } catch { return nil }
        case (.delete, _):
            do { return try second.applied(to: nil, field: field).map(FieldOperation.set) ?? .delete } catch { return nil }
        case (.increment(let a), .increment(let b)):
            guard let sum = try? FieldOperation.increment(b).applied(to: a, field: field) else { return nil }
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
