import Foundation
public import MBaaSCore

/// Roles on `/roles` (class `_Role`): `name`, and the relations `users` (to `_User`) and `roles` (to `_Role`).
/// An ACL grants a role with the key `role:<name>`. These are Parse-specific calls; ``currentUser()`` reports the
/// roles a user belongs to directly. Membership changes (`addUsers`, `removeUsers`, `addRoles`) are the family's
/// (``ParseFamilyClient``).
extension ParseBackend {
    /// Creates a role with its members and returns its objectId. Parse role names are letters, digits, `_`, `-`
    /// and spaces (checked client-side by the SDKs; checked here too).
    @discardableResult
    public func createRole(name: String, users: [String] = [], roles: [String] = [], acl: ACL? = nil) async throws -> String {
        guard !name.isEmpty, name.allSatisfy({ ($0.isASCII && ($0.isLetter || $0.isNumber)) || "_- ".contains($0) }) else {
            throw MBaaSError(.invalidRequest, "role name '\(name)' may contain only letters, digits, '_', '-' and spaces")
        }
        let body = try ParseFamilyRoles<ParseWire>.createBody(name: name, users: users, roles: roles, acl: acl)
        let response = try await send(.post, ParseRoute.objects(ParseWire.roleClass).path, body: .json(body),
                                      context: "create role \(name)")
        return try ParseCreated(json: try json(response)).objectId
    }

    /// The names of the roles whose `users` relation holds a user, sorted by name: `GET /roles?where={"users":
    /// Pointer(_User,id)}&order=name` (a relation queried with a pointer matches its members), pages of 1000.
    /// Sub-roles are not followed.
    public func roleNames(ofUser userId: String) async throws(MBaaSError) -> [String] {
        var names: [String] = []
        var skip = 0
        while true {
            let q = ParseQuery(where: ["users": ParseCodec.pointerJSON(Pointer(className: ParseWire.userClass, objectId: userId))],
                               order: ["name"], limit: ParseWire.maxLimit, skip: skip, keys: ["name"])
            let page = try await find(className: ParseWire.roleClass, q)
            names += page.results.compactMap { $0["name"]?.stringValue }
            if page.results.count < ParseWire.maxLimit { break }
            skip += page.results.count
        }
        return names
    }
}
