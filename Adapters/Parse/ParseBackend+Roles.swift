import Foundation
public import MBaaSCore

/// Roles on `/roles` (class `_Role`): `name`, and the relations `users` (to `_User`) and `roles` (to `_Role`).
/// An ACL grants a role with the key `role:<name>`. These are Parse-specific calls; ``currentUser()`` reports the
/// roles a user belongs to directly.
extension ParseBackend {
    /// Creates a role with its members and returns its objectId. Parse role names are letters, digits, `_`, `-`
    /// and spaces (checked client-side by the SDKs; checked here too).
    @discardableResult
    public func createRole(name: String, users: [String] = [], roles: [String] = [], acl: ACL? = nil) async throws -> String {
        guard !name.isEmpty, name.allSatisfy({ ($0.isASCII && ($0.isLetter || $0.isNumber)) || "_- ".contains($0) }) else {
            throw MBaaSError(.invalidRequest, "role name '\(name)' may contain only letters, digits, '_', '-' and spaces")
        }
        var body: JSONObject = ["name": .string(name)]
        if let acl { body["ACL"] = try ParseCodec.encode(acl) }
        if !users.isEmpty {
            body["users"] = ParseFieldChange.addRelation(users.map { Pointer(className: ParseWire.userClass, objectId: $0) }).json
        }
        if !roles.isEmpty {
            body["roles"] = ParseFieldChange.addRelation(roles.map { Pointer(className: ParseWire.roleClass, objectId: $0) }).json
        }
        let response = try await send(.post, ParseRoute.objects(ParseWire.roleClass).path, body: .json(body),
                                      context: "create role \(name)")
        return try ParseCreated(json: try json(response)).objectId
    }

    /// Adds users (by objectId) to a role.
    public func addUsers(_ userIds: [String], toRole roleId: String) async throws {
        _ = try await addRelation(className: ParseWire.roleClass, id: roleId, field: "users",
                                  userIds.map { Pointer(className: ParseWire.userClass, objectId: $0) })
    }

    /// Removes users (by objectId) from a role.
    public func removeUsers(_ userIds: [String], fromRole roleId: String) async throws {
        _ = try await removeRelation(className: ParseWire.roleClass, id: roleId, field: "users",
                                     userIds.map { Pointer(className: ParseWire.userClass, objectId: $0) })
    }

    /// Adds sub-roles (by objectId) to a role.
    public func addRoles(_ roleIds: [String], toRole roleId: String) async throws {
        _ = try await addRelation(className: ParseWire.roleClass, id: roleId, field: "roles",
                                  roleIds.map { Pointer(className: ParseWire.roleClass, objectId: $0) })
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
