import Foundation
import MBaaSCore

/// `--classes A,B` of `migrate`, `export`, `verify`: class names separated by commas. An empty list (`''`) or an
/// empty name (`A,,B`) is `invalidRequest` (exit 2): an empty list would move nothing and end "ok".
func parseClassList(_ text: String) throws(MBaaSError) -> [String] {
    var classes: [String] = []
    for part in text.split(separator: ",", omittingEmptySubsequences: false) {
        let name = part.trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else {
            throw MBaaSError(.invalidRequest, "--classes: '\(text)' has an empty class name; give class names separated by commas (--classes A,B), or leave --classes out for every class")
        }
        classes.append(name)
    }
    return classes
}

/// The file a `files download` or `files delete` argument names: a stored name as it is, or the neutral File value
/// (`{"__type":"File","name":…,"attachment":{…}}` as printed by `files upload`, `objects get` or `files list`)
/// given as JSON text, `@FILE` (read from the file) or `-` (read from stdin). The File value reaches files that are
/// kept in a record (an attachment), which a name alone may not. An argument starting with `{` or `@`, or `-`, is
/// read as a File value; a stored name of that form is given as `{"__type":"File","name":"@name"}`.
func fileArgument(_ text: String) throws(MBaaSError) -> FileReference {
    guard text == "-" || text.hasPrefix("@") || text.hasPrefix("{") else { return FileReference(name: text) }
    let json = try parseJSONArgument(readArgument(text, name: "file"), name: "file")
    let value: Value
    do { value = try Value(json: json) } catch { throw MBaaSError(.invalidRequest, "file: \(error.message)") }
    guard case .file(let reference) = value else {
        throw MBaaSError(.invalidRequest, #"file: expected a stored name or a File value ({"__type":"File","name":…}), got \#(json.printed())"#)
    }
    return reference
}
