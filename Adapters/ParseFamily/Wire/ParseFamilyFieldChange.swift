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
        typealias Codec = ParseFamilyCodec<Vendor>
        func list(_ values: [Value]) throws(MBaaSError) -> [JSON] {
            var out: [JSON] = []
            for (i, v) in values.enumerated() { out.append(try Codec.encode(v, path: "\(path)[\(i)]")) }
            return out
        }
        switch op {
        case .set(let v): self = .set(try Codec.encode(v, path: path))
        case .delete: self = Vendor.rules.deleteOperator ? .delete : .set(.null)
        case .increment(let v):
            guard v.doubleValue != nil else {
                throw MBaaSError(.invalidRequest, "\(path): increment takes a number, got \(v.typeName)")
            }
            self = .increment(try Codec.encode(v, path: path))
        case .add(let vs): self = .add(try list(vs))
        case .addUnique(let vs): self = .addUnique(try list(vs))
        case .remove(let vs): self = .remove(try list(vs))
        }
    }

    /// The core field operation of a change (server direction); relation changes have none (`nil`).
    public func fieldOperation(path: String = "$") throws(MBaaSError) -> FieldOperation? {
        typealias Codec = ParseFamilyCodec<Vendor>
        func list(_ items: [JSON]) throws(MBaaSError) -> [Value] {
            var out: [Value] = []
            for (i, item) in items.enumerated() { out.append(try Codec.decode(item, path: "\(path)[\(i)]")) }
            return out
        }
        switch self {
        case .set(let v): return .set(try Codec.decode(v, path: path))
        case .delete: return .delete
        case .increment(let n): return .increment(try Codec.decode(n, path: path))
        case .add(let vs): return .add(try list(vs))
        case .addUnique(let vs): return .addUnique(try list(vs))
        case .remove(let vs): return .remove(try list(vs))
        case .addRelation, .removeRelation: return nil
        }
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
