/// A backend whose server does not tell the types of its classes' fields, so its client reads values back typed
/// only for the classes whose field types it knows: those it defined on the server itself, and those it is told.
///
/// A client that lives longer than one process (the `mbaas` CLI, one process per command) keeps
/// ``definedFieldTypes`` between runs under ``fieldTypesScope`` and gives them back with
/// ``declareFieldTypes(_:)`` when it opens the backend again; otherwise the next process could neither read those
/// classes typed nor write to them.
///
/// Field types are named as ``Value/typeName`` names value types: `string`, `int`, `double`, `bool`, `Date`,
/// `Bytes`, `array`, `object`, `Pointer`, `File`, `GeoPoint`. An adapter documents the names it adds (a length, a
/// kind of column of its own) and writes ``definedFieldTypes`` with names its ``declareFieldTypes(_:)`` accepts.
public protocol FieldTypeDeclaring: Sendable {
    /// What the classes belong to (the app on its server), as the key to keep their field types under. Never
    /// holds a secret; the same for every user of the app.
    var fieldTypesScope: String { get }

    /// The field types of the classes this client defined on the server (class → field → type name).
    var definedFieldTypes: [String: [String: String]] { get }

    /// Declares the field types of classes that exist on the server (class → field → type name); sends nothing.
    /// A class this client knows already keeps the types it has. A class, field or type name the adapter cannot
    /// use is ``MBaaSError/Kind/invalidRequest`` naming it, and then nothing is declared.
    func declareFieldTypes(_ types: [String: [String: String]]) throws(MBaaSError)
}

/// Field types as JSON names them (`{"Memo":{"title":"string","n":"int"}}`): class → field → type name, the shape
/// ``FieldTypeDeclaring/declareFieldTypes(_:)`` takes. A document of another shape is
/// ``MBaaSError/Kind/invalidRequest`` naming the entry, each message starting with `context` (where the document came
/// from). Type names are not checked here: the adapter that declares them does. An entry whose type is not a
/// string has ``MBaaSError/refusedField`` `Class.field` (an adapter adds the names it takes to that error only).
public func fieldTypes(fromJSON json: JSON, context: String) throws(MBaaSError) -> [String: [String: String]] {
    let shape = #"a JSON object of classes, each an object of field names and type names ({"Memo":{"title":"string","n":"int"}})"#
    guard let classes = json.objectValue else { throw MBaaSError(.invalidRequest, "\(context) is not \(shape)") }
    var types: [String: [String: String]] = [:]
    for (className, fields) in classes {
        guard let fields = fields.objectValue else {
            throw MBaaSError(.invalidRequest, "\(context): class \(className) is not an object of field names and type names (\(shape))")
        }
        var named: [String: String] = [:]
        for (field, type) in fields {
            guard let type = type.stringValue else {
                throw MBaaSError(.invalidRequest, "\(context): \(className).\(field) is \(type.printed()), not a type name")
                    .refusing("\(className).\(field)")
            }
            named[field] = type
        }
        types[className] = named
    }
    return types
}
