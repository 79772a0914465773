import Foundation
public import MBaaSCore

/// Roles on `/roles`: `roleName`, and the relations `belongUser` (users) and `belongRole` (sub-roles).
/// A duplicate name is `E409001` → `duplicate`. These are NCMB-specific calls (the neutral API has no roles
/// management); ``currentUser()`` reports the roles a user belongs to directly. Membership changes
/// (`addUsers`, `removeUsers`, `addRoles`) are the family's (``ParseFamilyClient``).
extension NCMBBackend {
    /// Creates a role with its members and returns its objectId.
    @discardableResult
    public func createRole(name: String, users: [String] = [], roles: [String] = [], acl: ACL? = nil) async throws -> String {
        guard !name.isEmpty else { throw MBaaSError(.invalidRequest, "roleName is empty") }
        let body = try ParseFamilyRoles<NCMBWire>.createBody(name: name, users: users, roles: roles, acl: acl)
        let response = try await send(.post, "/roles", body: .json(body), context: "create role \(name)")
        guard let id = try NCMBCreated(json: try json(response)).objectId else {
            throw MBaaSError(.decoding, "create role response without objectId")
        }
        return id
    }

    /// The users in a role: `GET /users?where={"$relatedTo":{"object":Pointer(role),"key":"belongUser"}}`.
    public func users(inRole roleId: String, limit: Int = NCMBQuery.maxLimit) async throws -> [Record] {
        let query = NCMBQuery(where: NCMBWhere(relatedTo: .init(object: Pointer(className: "role", objectId: roleId), key: "belongUser")),
                              limit: limit)
        return try await queryPage(className: "_User", query).records
    }

    /// The names of the roles whose `belongUser` relation holds a user, sorted by name.
    ///
    /// Membership is asked the way every vendor SDK asks it, through `$relatedTo` (role → users): [doc] ncmb.md §1.7
    /// "Members of a role"; [sdk] ncmb_js `lib/query.js` `relatedTo`, `test/mbaas.yml` (role users). No SDK, doc or
    /// fixture queries `/roles` by equality on the `belongUser` relation, so this does not either. It costs one
    /// query for the roles the caller may read (`GET /roles?order=roleName`, paged by 1000) plus one per role:
    /// `GET /users?where={"$relatedTo":{"object":Pointer(role),"key":"belongUser"},"objectId":userId}&limit=1`.
    /// Sub-roles (`belongRole`) are not followed.
    public func roleNames(ofUser userId: String) async throws(MBaaSError) -> [String] {
        var roles: [(id: String, name: String)] = []
        var skip = 0
        while true {
            let page = try await find(className: "role", NCMBQuery(order: ["roleName"], limit: NCMBQuery.maxLimit,
                                                                   skip: skip == 0 ? nil : skip))
            for role in page.results {
                if let id = role["objectId"]?.stringValue, let name = role["roleName"]?.stringValue { roles.append((id, name)) }
            }
            if page.results.count < NCMBQuery.maxLimit { break }
            skip += page.results.count
        }
        var names: [String] = []
        for role in roles {
            var condition = NCMBWhere(relatedTo: .init(object: Pointer(className: "role", objectId: role.id), key: "belongUser"))
            condition.entries.append(.init(key: "objectId", constraint: .equals(.string(userId))))
            let members = try await find(className: "_User", NCMBQuery(where: condition, limit: 1))
            if !members.results.isEmpty { names.append(role.name) }
        }
        return names
    }
}
