public import MBaaSCore

/// One member of a Parse-family update body: a plain value or an `__op` operator, values in the vendor's JSON
/// (``ParseFamilyCodec``) and relation members as pointers. The operators are the core's one `__op` form
/// (``MBaaSCore/FieldChangeJSON``); this type only maps their values through the vendor's codec. A vendor without
/// the `Delete` operator (``ParseFamilyRules/deleteOperator``) writes a deletion as `null` and refuses `Delete` as an
/// unknown operator.
public enum ParseFamilyFieldChange<Vendor: ParseFamilyVendor>: Sendable, Hashable {
    /// Set the field (vendor JSON value; `null` clears it).
    case set(JSON)
    /// `{"__op":"Delete"}`
    case delete
    /// `{"__op":"Increment","amount":n}`
    case increment(JSON)
    /// `{"__op":"Add","objects":[…]}`
    case add([JSON])
    /// `{"__op":"AddUnique","objects":[…]}`
    case addUnique([JSON])
    /// `{"__op":"Remove","objects":[…]}`
    case remove([JSON])
    /// `{"__op":"AddRelation","objects":[Pointer…]}`
    case addRelation([Pointer])
    /// `{"__op":"RemoveRelation","objects":[Pointer…]}`
    case removeRelation([Pointer])

    /// The vendor change for a core field operation.
    public init(_ op: FieldOperation, path: String = "$") throws(MBaaSError) {
        func encoded(_ values: [Value]) throws(MBaaSError) -> [JSON] {
            try Self.mapped(values, path) { v, p throws(MBaaSError) in try ParseFamilyCodec<Vendor>.encode(v, path: p) }
        }
        switch op {
        case .set(let v): self = .set(try ParseFamilyCodec<Vendor>.encode(v, path: path))
        case .delete: self = Vendor.rules.deleteOperator ? .delete : .set(.null)
        case .increment(let v):
            guard v.doubleValue != nil else {
                throw MBaaSError(.invalidRequest, "\(path): increment takes a number, got \(v.typeName)")
            }
            self = .increment(try ParseFamilyCodec<Vendor>.encode(v, path: path))
        case .add(let vs): self = .add(try encoded(vs))
        case .addUnique(let vs): self = .addUnique(try encoded(vs))
        case .remove(let vs): self = .remove(try encoded(vs))
        }
    }

    /// The core field operation of a change (server direction); relation changes have none (`nil`).
    public func fieldOperation(path: String = "$") throws(MBaaSError) -> FieldOperation? {
        switch self {
        case .addRelation, .removeRelation: return nil
        default: return try storeOperation(path: path) { json, p throws(MBaaSError) in try ParseFamilyCodec<Vendor>.decode(json, path: p) }.operation
        }
    }

    /// What a server's store applies for this change: the operation with its values read by `value` (given each
    /// value's path, `key` or `key[i]`, and throwing the server's own errors), a relation change as adding
    /// (`addUnique`) or removing its pointers, and whether the field is a relation (for the server to remember).
    public func storeOperation<E: Error>(path: String, value: (JSON, String) throws(E) -> Value) throws(E)
        -> (operation: FieldOperation, relation: Bool) {
        switch self {
        case .set(let v): return (.set(try value(v, path)), false)
        case .delete: return (.delete, false)
        case .increment(let n): return (.increment(try value(n, path)), false)
        case .add(let vs): return (.add(try Self.mapped(vs, path, value)), false)
        case .addUnique(let vs): return (.addUnique(try Self.mapped(vs, path, value)), false)
        case .remove(let vs): return (.remove(try Self.mapped(vs, path, value)), false)
        case .addRelation(let ps): return (.addUnique(ps.map(Value.pointer)), true)
        case .removeRelation(let ps): return (.remove(ps.map(Value.pointer)), true)
        }
    }

    /// Each item converted with its path (`path[i]`).
    static func mapped<A, B, E: Error>(_ items: [A], _ path: String, _ convert: (A, String) throws(E) -> B) throws(E) -> [B] {
        var out: [B] = []
        out.reserveCapacity(items.count)
        for (i, item) in items.enumerated() { out.append(try convert(item, "\(path)[\(i)]")) }
        return out
    }

    /// The change in the core's `__op` form, values in the vendor's JSON.
    public var operation: FieldChangeJSON {
        switch self {
        case .set(let v): .set(v)
        case .delete: .delete
        case .increment(let n): .increment(n)
        case .add(let vs): .add(vs)
        case .addUnique(let vs): .addUnique(vs)
        case .remove(let vs): .remove(vs)
        case .addRelation(let ps): .addRelation(ps.map(ParseFamilyCodec<Vendor>.pointerJSON))
        case .removeRelation(let ps): .removeRelation(ps.map(ParseFamilyCodec<Vendor>.pointerJSON))
        }
    }

    public var json: JSON { operation.json }

    /// Reads one member of an update body (server side). Malformed operators are ``MBaaSError/Kind/invalidRequest``.
    public init(json: JSON, path: String = "$") throws(MBaaSError) {
        func pointers(_ items: [JSON]) throws(MBaaSError) -> [Pointer] {
            var out: [Pointer] = []
            for item in items {
                guard case .pointer(let p) = try ParseFamilyCodec<Vendor>.decode(item, path: path) else {
                    throw MBaaSError(.invalidRequest, "\(path): relation operators take Pointers")
                }
                out.append(p)
            }
            return out
        }
        switch try FieldChangeJSON(json: json, path: path) {
        case .set(let v): self = .set(v)
        case .delete:
            guard Vendor.rules.deleteOperator else { throw MBaaSError(.invalidRequest, "\(path): unknown __op \"Delete\"") }
            self = .delete
        case .increment(let n): self = .increment(n)
        case .add(let vs): self = .add(vs)
        case .addUnique(let vs): self = .addUnique(vs)
        case .remove(let vs): self = .remove(vs)
        case .addRelation(let items): self = .addRelation(try pointers(items))
        case .removeRelation(let items): self = .removeRelation(try pointers(items))
        }
    }
}
