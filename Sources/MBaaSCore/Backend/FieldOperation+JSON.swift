import Foundation

/// The neutral JSON form of field operations, used wherever a partial update is written as text (the CLI's
/// `objects update`, bundles, tools): a plain neutral value sets the field; an object with `__op` is an operation.
///
/// | operation | JSON |
/// |---|---|
/// | ``FieldOperation/set(_:)`` | any neutral value (`"text"`, `5`, `{"__type":"Date","iso":"…"}`) |
/// | ``FieldOperation/delete`` | `{"__op":"Delete"}` |
/// | ``FieldOperation/increment(_:)`` | `{"__op":"Increment","amount":5}` |
/// | ``FieldOperation/add(_:)`` | `{"__op":"Add","objects":[…]}` |
/// | ``FieldOperation/addUnique(_:)`` | `{"__op":"AddUnique","objects":[…]}` |
/// | ``FieldOperation/remove(_:)`` | `{"__op":"Remove","objects":[…]}` |
///
/// Malformed operations are ``MBaaSError/Kind/invalidRequest`` naming the path (`money.amount`).
extension FieldOperation {
    public var json: JSON {
        func op(_ name: String, _ values: [Value]) -> JSON {
            .object(["__op": .string(name), "objects": .array(values.map(\.json))])
        }
        switch self {
        case .set(let v): return v.json
        case .delete: return .object(["__op": "Delete"])
        case .increment(let n): return .object(["__op": "Increment", "amount": n.json])
        case .add(let vs): return op("Add", vs)
        case .addUnique(let vs): return op("AddUnique", vs)
        case .remove(let vs): return op("Remove", vs)
        }
    }

    public init(json: JSON, path: String) throws(MBaaSError) {
        guard let op = json["__op"] else {
            self = .set(try Value(json: json, path: path))
            return
        }
        func objects() throws(MBaaSError) -> [Value] {
            guard let items = json["objects"]?.arrayValue else {
                throw MBaaSError(.invalidRequest, "\(path): '\(op.stringValue ?? "")' needs an 'objects' array")
            }
            var values: [Value] = []
            for (i, item) in items.enumerated() { values.append(try Value(json: item, path: "\(path).objects[\(i)]")) }
            return values
        }
        switch op.stringValue {
        case "Increment":
            guard let amount = json["amount"], amount.doubleValue != nil else {
                throw MBaaSError(.invalidRequest, "\(path): 'Increment' needs a number 'amount'")
            }
            self = .increment(try Value(json: amount, path: "\(path).amount"))
        case "Delete": self = .delete
        case "Add": self = .add(try objects())
        case "AddUnique": self = .addUnique(try objects())
        case "Remove": self = .remove(try objects())
        default:
            throw MBaaSError(.invalidRequest, "\(path): unknown __op \(op.printed()) (Increment, Delete, Add, AddUnique, Remove)")
        }
    }
}

extension RecordUpdate {
    /// The changes of a JSON object in the neutral form (see ``FieldOperation/init(json:path:)``); metadata names
    /// (``Record/reservedFieldNames``) are refused.
    public init(changes object: JSONObject, expectedVersion: String? = nil, acl: ACL? = nil) throws(MBaaSError) {
        var changes: [String: FieldOperation] = [:]
        for (key, json) in object {
            if Record.reservedFieldNames.contains(key) {
                throw MBaaSError(.invalidRequest, "fields: '\(key)' is reserved for record metadata")
            }
            changes[key] = try FieldOperation(json: json, path: key)
        }
        self.init(changes: changes, expectedVersion: expectedVersion, acl: acl)
    }

    /// The changes as a JSON object in the neutral form.
    public var changesJSON: JSONObject {
        var o = JSONObject()
        for key in changes.keys.sorted() { o[key] = changes[key]!.json }
        return o
    }
}
