import Foundation
import MBaaSCore

/// Roles on `/roles`: `roleName`, and the relations `belongUser` (users) and `belongRole` (sub-roles).
/// A duplicate name is `E409001` → `duplicate`. These are NCMB-specific calls (the neutral API has no roles
/// management); ``currentUser()`` reports the roles a user belongs to directly.
extension NCMBBackend {
    /// Creates a role with its members and returns its objectId.
    @discardableResult
    public func createRole(name: String, users: [String] = [], roles: [String] = [], acl: ACL? = nil) async throws -> String {
        guard !name.isEmpty else { throw MBaaSError(.invalidRequest, "roleName is empty") }
        var body: JSONObject = ["roleName": .string(name)]
        if !users.isEmpty {
            body["belongUser"] = NCMBFieldChange.addRelation(users.map { Pointer(className: "user", objectId: $0) }).json
        }
        if !roles.isEmpty {
            body["belongRole"] = NCMBFieldChange.addRelation(roles.map { Pointer(className: "role", objectId: $0) }).json
        }
        if let acl { body["acl"] = try NCMBCodec.encode(acl) }
        let response = try await send("POST", "/roles", body: .json(body), context: "create role \(name)")
        guard let id = try NCMBCreated(json: try json(response)).objectId else {
            throw MBaaSError(.decoding, "create role response without objectId")
        }
        return id
    }

    /// Adds users (by objectId) to a role.
    public func addUsers(_ userIds: [String], toRole roleId: String) async throws {
        _ = try await addRelation(className: "role", id: roleId, field: "belongUser",
                                  userIds.map { Pointer(className: "user", objectId: $0) })
    }

    /// Removes users (by objectId) from a role.
    public func removeUsers(_ userIds: [String], fromRole roleId: String) async throws {
        _ = try await removeRelation(className: "role", id: roleId, field: "belongUser",
                                     userIds.map { Pointer(className: "user", objectId: $0) })
    }

    /// Adds sub-roles (by objectId) to a role.
    public func addRoles(_ roleIds: [String], toRole roleId: String) async throws {
        _ = try await addRelation(className: "role", id: roleId, field: "belongRole",
                                  roleIds.map { Pointer(className: "role", objectId: $0) })
    }

    /// The users in a role: `GET /users?where={"$relatedTo":{"object":Pointer(role),"key":"belongUser"}}`.
    public func users(inRole roleId: String, limit: Int = NCMBQuery.maxLimit) async throws -> [Record] {
        let query = NCMBQuery(where: NCMBWhere(relatedTo: .init(object: Pointer(className: "role", objectId: roleId), key: "belongUser")),
                              limit: limit)
        return try await queryPage(className: "_User", query).records
    }

    /// The names of the roles whose `belongUser` relation holds a user:
    /// `GET /roles?where={"belongUser":{"__type":"Pointer","className":"user","objectId":…}}`.
    public func roleNames(ofUser userId: String) async throws(MBaaSError) -> [String] {
        let query = NCMBQuery(
            where: NCMBWhere(entries: [.init(key: "belongUser", constraint: .equals(NCMBCodec.pointerJSON(Pointer(className: "user", objectId: userId))))]),
            order: ["roleName"], limit: NCMBQuery.maxLimit)
        let results = try await find(className: "role", query)
        return results.results.compactMap { $0["roleName"]?.stringValue }
    }
}
