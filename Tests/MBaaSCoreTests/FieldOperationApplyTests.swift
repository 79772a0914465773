import MBaaSCore
import Testing

/// The one meaning of a field operation that the embedded store and the offline replica both apply.
@Suite("FieldOperation.applied(to:field:)")
struct FieldOperationApplyTests {
    @Test("increments start at 0, keep ints as ints, widen to doubles, and refuse overflow and non-numbers")
    func increments() throws {
        #expect(try FieldOperation.increment(.int(5)).applied(to: nil, field: "n") == .int(5))
        #expect(try FieldOperation.increment(.int(5)).applied(to: .null, field: "n") == .int(5))
        #expect(try FieldOperation.increment(.int(-2)).applied(to: .int(7), field: "n") == .int(5))
        #expect(try FieldOperation.increment(.double(0.5)).applied(to: .int(1), field: "n") == .double(1.5))
        let overflow = #expect(throws: MBaaSError.self) { try FieldOperation.increment(.int(1)).applied(to: .int(Int64.max), field: "n") }
        #expect(overflow?.kind == .invalidRequest)
        #expect(overflow?.message == "n: incrementing \(Int64.max) by 1 overflows a 64-bit integer")
        let text = #expect(throws: MBaaSError.self) { try FieldOperation.increment(.int(1)).applied(to: .string("x"), field: "n") }
        #expect(text?.message == "n: cannot increment a string")
    }

    @Test("array operations start from an empty array, compare numbers by value, and refuse a non-array field")
    func arrays() throws {
        #expect(try FieldOperation.add([.int(1)]).applied(to: nil, field: "a") == .array([.int(1)]))
        #expect(try FieldOperation.addUnique([.int(1), .int(2)]).applied(to: .array([.double(1)]), field: "a")
                == .array([.double(1), .int(2)]))
        #expect(try FieldOperation.remove([.int(1)]).applied(to: .array([.int(1), .double(1), .int(3)]), field: "a")
                == .array([.int(3)]))
        #expect(try FieldOperation.delete.applied(to: .int(1), field: "a") == nil)
        let refused = #expect(throws: MBaaSError.self) { try FieldOperation.add([.int(1)]).applied(to: .int(4), field: "a") }
        #expect(refused?.message == "a: 'add' needs an array field, the field holds a int")
    }
}
