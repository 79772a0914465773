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
        switch self {
        case .set(let v): return FieldChangeJSON.set(v.json).json
        case .delete: return FieldChangeJSON.delete.json
        case .increment(let n): return FieldChangeJSON.increment(n.json).json
        case .add(let vs): return FieldChangeJSON.add(vs.map(\.json)).json
        case .addUnique(let vs): return FieldChangeJSON.addUnique(vs.map(\.json)).json
        case .remove(let vs): return FieldChangeJSON.remove(vs.map(\.json)).json
        }
    }

    public init(json: JSON, path: String) throws(MBaaSError) {
        func values(_ items: [JSON]) throws(MBaaSError) -> [Value] {
            var values: [Value] = []
            for (i, item) in items.enumerated() { values.append(try Value(json: item, path: "\(path).objects[\(i)]")) }
            return values
        }
        switch try FieldChangeJSON(json: json, path: path) {
        case .set(let v): self = .set(try Value(json: v, path: path))
        case .delete: self = .delete
        case .increment(let amount): self = .increment(try Value(json: amount, path: "\(path).amount"))
        case .add(let items): self = .add(try values(items))
        case .addUnique(let items): self = .addUnique(try values(items))
        case .remove(let items): self = .remove(try values(items))
        case .addRelation, .removeRelation:
            throw MBaaSError(.invalidRequest, "\(path): __op \(json["__op"]?.printed() ?? "") has no neutral form (Increment, Delete, Add, AddUnique, Remove)")
        }
    }
}

/// The one `__op` codec: a member of an update body as the `__op` form writes it, its values still JSON in whatever
/// value form the writer uses (the neutral form here, a vendor's typed JSON in a Wire module). ``FieldOperation``'s
/// JSON is this with neutral values; a Wire module whose vendor writes the same operators maps its values the same
/// way instead of writing the operators again.
///
/// | case | JSON |
/// |---|---|
/// | ``set(_:)`` | any value that is not an object with `__op` |
/// | ``delete`` | `{"__op":"Delete"}` |
/// | ``increment(_:)`` | `{"__op":"Increment","amount":n}` (a number) |
/// | ``add(_:)``, ``addUnique(_:)``, ``remove(_:)`` | `{"__op":"Add","objects":[…]}`, `AddUnique`, `Remove` |
/// | ``addRelation(_:)``, ``removeRelation(_:)`` | `{"__op":"AddRelation","objects":[…]}`, `RemoveRelation` (no neutral operation: relations are a vendor's) |
///
/// Reading refuses a malformed operator with ``MBaaSError/Kind/invalidRequest`` naming the path: `'Increment' needs a
/// number 'amount'`, `'Add' needs an 'objects' array`, `unknown __op "X"`.
public enum FieldChangeJSON: Sendable, Hashable {
    case set(JSON)
    case delete
    case increment(JSON)
    case add([JSON])
    case addUnique([JSON])
    case remove([JSON])
    case addRelation([JSON])
    case removeRelation([JSON])

    public var json: JSON {
        func op(_ name: String, _ objects: [JSON]) -> JSON { .object(["__op": .string(name), "objects": .array(objects)]) }
        switch self {
        case .set(let v): return v
        case .delete: return .object(["__op": "Delete"])
        case .increment(let n): return .object(["__op": "Increment", "amount": n])
        case .add(let vs): return op("Add", vs)
        case .addUnique(let vs): return op("AddUnique", vs)
        case .remove(let vs): return op("Remove", vs)
        case .addRelation(let vs): return op("AddRelation", vs)
        case .removeRelation(let vs): return op("RemoveRelation", vs)
        }
    }

    /// Reads one member of an update body: an object with `__op` is an operator, anything else sets the field.
    public init(json: JSON, path: String) throws(MBaaSError) {
        guard let op = json["__op"] else {
            self = .set(json)
            return
        }
        func objects() throws(MBaaSError) -> [JSON] {
            guard let items = json["objects"]?.arrayValue else {
                throw MBaaSError(.invalidRequest, "\(path): '\(op.stringValue ?? "")' needs an 'objects' array")
            }
            return items
        }
        switch op.stringValue {
        case "Increment":
            guard let amount = json["amount"], amount.doubleValue != nil else {
                throw MBaaSError(.invalidRequest, "\(path): 'Increment' needs a number 'amount'")
            }
            self = .increment(amount)
        case "Delete": self = .delete
        case "Add": self = .add(try objects())
        case "AddUnique": self = .addUnique(try objects())
        case "Remove": self = .remove(try objects())
        case "AddRelation": self = .addRelation(try objects())
        case "RemoveRelation": self = .removeRelation(try objects())
        default:
            throw MBaaSError(.invalidRequest, "\(path): unknown __op \(op.printed()) (Increment, Delete, Add, AddUnique, Remove, AddRelation, RemoveRelation)")
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
