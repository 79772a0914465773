import Foundation

/// What a ``FieldOperation`` does to a field's current value: one meaning for every store that applies operations
/// itself (the embedded store inside its write transaction, which makes each operation atomic; an offline replica on
/// its local copy).
///
/// - `set` gives the value; `delete` removes the field (`nil`).
/// - `increment`: a missing or null field starts at 0; int + int stays an int (overflow is an error), anything with a
///   double is a double; a non-number field or amount is ``MBaaSError/Kind/invalidRequest``.
/// - `add`: appends (a missing field starts empty); `addUnique`: appends the values not already present;
///   `remove`: removes every occurrence (a missing field becomes `[]`). Membership uses
///   ``Value/looselyEquals(_:)`` (numbers by value). A non-array field is `invalidRequest`.
extension FieldOperation {
    /// The field's value after this operation (`nil`: the field is removed); `field` names it in errors.
    public func applied(to current: Value?, field: String) throws(MBaaSError) -> Value? {
        switch self {
        case .set(let v):
            return v
        case .delete:
            return nil
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
                guard amount.doubleValue != nil else {
                    throw MBaaSError(.invalidRequest, "\(field): increment takes a number, got \(amount.typeName)")
                }
                throw MBaaSError(.invalidRequest, "\(field): cannot increment a \(base.typeName)")
            }
        case .add(let values):
            return .array(try Self.array(current, field: field, op: "add") + values)
        case .addUnique(let values):
            var items = try Self.array(current, field: field, op: "addUnique")
            for v in values where !items.contains(where: { $0.looselyEquals(v) }) { items.append(v) }
            return .array(items)
        case .remove(let values):
            let items = try Self.array(current, field: field, op: "remove")
            return .array(items.filter { item in !values.contains(where: { $0.looselyEquals(item) }) })
        }
    }

    private static func array(_ current: Value?, field: String, op: String) throws(MBaaSError) -> [Value] {
        switch current {
        case nil, .null?: return []
        case .array(let items)?: return items
        case let other?: throw MBaaSError(.invalidRequest, "\(field): '\(op)' needs an array field, the field holds a \(other.typeName)")
        }
    }
}
