import Foundation
import MBaaSCore
import Testing

@Suite("Field operations in their neutral JSON form")
struct FieldOperationJSONTests {
    @Test("every operation prints and parses back to itself", arguments: [
        FieldOperation.set(.string("a")), .set(.date(ISO8601.parse("2024-03-31T00:00:00.000Z")!)), .delete,
        .increment(.int(5)), .increment(.double(-1.5)), .add([.string("x"), .int(1)]), .addUnique([.string("y")]),
        .remove([.bool(true)]),
    ])
    func roundTrip(_ op: FieldOperation) throws {
        #expect(try FieldOperation(json: op.json, path: "f") == op)
        #expect(try FieldOperation(json: JSON.parse(op.json.data()), path: "f") == op)
    }

    @Test("malformed operations name the field and what is wrong")
    func malformed() throws {
        for (text, needle) in [(#"{"__op":"Increment"}"#, "money: 'Increment' needs a number 'amount'"),
                               (#"{"__op":"Increment","amount":"5"}"#, "needs a number"),
                               (#"{"__op":"Add"}"#, "needs an 'objects' array"),
                               (#"{"__op":"Explode"}"#, "unknown __op")] {
            do {
                _ = try FieldOperation(json: JSON.parse(Data(text.utf8)), path: "money")
                Issue.record("\(text) was accepted")
            } catch let e as MBaaSError {
                #expect(e.kind == .invalidRequest && e.message.contains(needle), "\(e.message)")
            }
        }
        #expect(throws: MBaaSError.self) { _ = try RecordUpdate(changes: ["id": "x"]) }
        let update = try RecordUpdate(changes: ["n": .object(["__op": "Increment", "amount": 2]), "t": "hi"])
        #expect(update.changes == ["n": .increment(.int(2)), "t": .set(.string("hi"))])
        #expect(update.changesJSON["n"] == .object(["__op": "Increment", "amount": 2]))
    }
}
