import Foundation
import MBaaSCore

/// The field types of the classes the CLI defined on backends whose servers do not tell them
/// (``MBaaSCore/FieldTypeDeclaring``: AppPot), kept between runs so that a later command can write to such a class
/// and reads it back typed. One JSON file beside the session file, named after it (`sessions.json` →
/// `sessions.schemas.json`), under the session file's rules: mode 0600 in its 0700 directory, every change a
/// read-modify-write under an exclusive `flock` on `<file>.lock`, replaced atomically. Keyed by the backend's
/// ``MBaaSCore/FieldTypeDeclaring/fieldTypesScope`` (the app on its server, no secret), then class → field → type
/// name:
///
/// ```json
/// {"http://127.0.0.1:8080/apppot/api/24/jp.co.example.App/1.0": {"Memo": {"n": "int", "title": "string"}}}
/// ```
struct FieldTypesFile {
    let url: URL

    init(beside sessions: SessionFile) {
        let name = sessions.url.deletingPathExtension().lastPathComponent
        url = sessions.url.deletingLastPathComponent().appendingPathComponent(name + ".schemas.json")
    }

    typealias Types = [String: [String: String]]

    /// Gives a backend that needs its classes' field types those kept for it. An unreadable file (permissions:
    /// `localIO`) is a warning on stderr, as an unreadable session file is; a damaged one is `invalidRequest`
    /// naming it.
    static func declareKept(on backend: any Backend, sessions: SessionFile) throws(MBaaSError) {
        guard let declaring = backend as? any FieldTypeDeclaring else { return }
        let file = FieldTypesFile(beside: sessions)
        let kept: Types
        do throws(MBaaSError) { kept = try file.load()[declaring.fieldTypesScope] ?? [:] } catch {
            guard error.kind == .localIO else { throw error }
            Terminal.writeErr("mbaas: warning: \(escapingControlCharacters(error.message, keepNewlines: false)); continuing without the kept field types\n")
            return
        }
        guard !kept.isEmpty else { return }
        do throws(MBaaSError) { try declaring.declareFieldTypes(kept) } catch {
            throw MBaaSError(.invalidRequest, "the field types kept in \(file.url.path) for \(declaring.fieldTypesScope): \(error.message) (remove that entry)")
        }
    }

    /// Keeps the field types of the classes the backend defined (merged into the file; written only when they
    /// change).
    static func keepDefined(by backend: any Backend, sessions: SessionFile) throws(MBaaSError) {
        guard let declaring = backend as? any FieldTypeDeclaring else { return }
        let defined = declaring.definedFieldTypes
        guard !defined.isEmpty else { return }
        let file = FieldTypesFile(beside: sessions)
        let scope = declaring.fieldTypesScope
        do throws(MBaaSError) {
            try SessionFile(url: file.url).withLock { () throws(MBaaSError) in
                var all = try file.load()
                var types = all[scope] ?? [:]
                for (className, fields) in defined { types[className] = fields }
                guard types != all[scope] else { return }
                all[scope] = types
                try file.save(all)
            }
        } catch {
            throw MBaaSError(error.kind, "\(error.message); the field types of \(defined.keys.sorted().joined(separator: ", ")) are not kept, so later commands need them in a schemas=FILE URL option")
        }
    }

    func load() throws(MBaaSError) -> [String: Types] {
        guard FileManager.default.fileExists(atPath: url.path) else { return [:] }
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw MBaaSError(.localIO, "the field types file \(url.path) cannot be read: \(MBaaSError.describe(error))")
        }
        let json: JSON
        do { json = try JSON.parse(data) } catch {
            throw MBaaSError(.invalidRequest, "the field types file \(url.path) is not valid JSON (\(error)); delete it (later commands then need a schemas=FILE URL option)")
        }
        guard let scopes = json.objectValue else {
            throw MBaaSError(.invalidRequest, "the field types file \(url.path) is not a JSON object; delete it (later commands then need a schemas=FILE URL option)")
        }
        var all: [String: Types] = [:]
        for (scope, classes) in scopes {
            all[scope] = try fieldTypes(fromJSON: classes, context: "the field types file \(url.path): the entry \(scope)")
        }
        return all
    }

    private func save(_ all: [String: Types]) throws(MBaaSError) {
        var object: [String: JSON] = [:]
        for (scope, classes) in all {
            object[scope] = .object(JSONObject(sorting: classes.mapValues { .object(JSONObject(sorting: $0.mapValues(JSON.string))) }))
        }
        // Created 0600 from the start, renamed over the old file (the session file's rules).
        try writePrivateFile(JSON.object(JSONObject(sorting: object)).data([.pretty]) + Data("\n".utf8), to: url,
                             what: "the field types file")
    }
}
