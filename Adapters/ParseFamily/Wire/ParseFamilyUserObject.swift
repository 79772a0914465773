public import MBaaSCore

/// A user object as a Parse-family vendor answers sign-up, log-in and `/users/{id}`: the id, the user name and
/// e-mail under the vendor's keys (``ParseFamilyRules/usernameKey``, ``ParseFamilyRules/emailKey``), the session
/// token on log-in and sign-up, and every member as received.
public struct ParseFamilyUserObject<Vendor: ParseFamilyVendor>: Sendable, Hashable {
    public var objectId: String
    public var username: String?
    public var email: String?
    public var sessionToken: String?
    /// Every member as received.
    public var object: JSONObject

    /// Reads a user object; one without `objectId` is ``MBaaSError/Kind/decoding``.
    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue, let id = o["objectId"]?.stringValue else {
            throw MBaaSError(.decoding, "user object without objectId")
        }
        let rules = Vendor.rules
        objectId = id
        username = o[rules.usernameKey]?.stringValue
        email = o[rules.emailKey]?.stringValue
        sessionToken = o["sessionToken"]?.stringValue
        object = o
    }

    /// The neutral user: custom fields decoded; the metadata, the name and e-mail keys and the vendor's
    /// ``ParseFamilyRules/userHiddenKeys`` (secrets, session state, system fields) left out of `fields`.
    public func user(roles: [String]) throws(MBaaSError) -> User {
        let rules = Vendor.rules
        let skip = rules.metadataKeys.union(rules.userHiddenKeys).union([rules.usernameKey, rules.emailKey])
        var fields: [String: Value] = [:]
        for (k, v) in object where !skip.contains(k) { fields[k] = try ParseFamilyCodec<Vendor>.decode(v, path: k) }
        return User(id: objectId, username: username, email: email, roles: roles, fields: fields)
    }
}
