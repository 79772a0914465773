import Foundation
import MBaaSCore

/// The `--users` file of the dialects whose vendor has no sign-up (AppPot, Salesforce): a JSON array with one object
/// per user, each with at least a user name and a password. Each dialect reads its own extra members from the
/// entries; this reads the file, its array and the credentials, with the same errors for every dialect.
enum UsersFile {
    /// The entries of `json`; anything but an array is ``MBaaSError/Kind/invalidRequest`` naming `shape`.
    static func entries(_ json: JSON, shape: String) throws(MBaaSError) -> [JSON] {
        guard let array = json.arrayValue else {
            throw MBaaSError(.invalidRequest, "the users file must be a JSON array of \(shape)")
        }
        return array
    }

    /// The file's JSON; an unreadable file or bad JSON is ``MBaaSError/Kind/invalidRequest`` naming the file.
    static func json(file path: String) throws(MBaaSError) -> JSON {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw MBaaSError(.invalidRequest, "cannot read the users file \(path): \(error.localizedDescription)")
        }
        do { return try JSON.parse(data) } catch { throw MBaaSError(.invalidRequest, "the users file \(path) is not JSON: \(error)") }
    }

    /// Entry `index`'s user name (the first of `usernameKeys` present) and password, both non-empty, or
    /// ``MBaaSError/Kind/invalidRequest`` naming the entry.
    static func credentials(_ entry: JSON, index: Int, usernameKeys: [String] = ["username"]) throws(MBaaSError) -> (username: String, password: String) {
        guard let username = usernameKeys.lazy.compactMap({ entry[$0]?.stringValue }).first, !username.isEmpty,
              let password = entry["password"]?.stringValue, !password.isEmpty
        else { throw MBaaSError(.invalidRequest, "users file entry \(index): needs a username and a password") }
        return (username, password)
    }
}
