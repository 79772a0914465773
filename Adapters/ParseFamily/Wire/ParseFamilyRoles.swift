public import MBaaSCore

/// How a vendor of the Parse family names its roles: the class a role pointer names, the class a user pointer
/// names, the name key and the two relations (users, sub-roles). Parse's form is the default:
/// `_Role`/`_User`/`name`/`users`/`roles` [doc] Parse REST guide, "Roles"; NCMB's is
/// `role`/`user`/`roleName`/`belongUser`/`belongRole` [doc] ncmb.md §1.7.
public struct ParseFamilyRoleForm: Sendable, Hashable {
    public var roleClass: String
    public var userClass: String
    public var nameKey: String
    public var usersKey: String
    public var rolesKey: String

    public init(roleClass: String = "_Role", userClass: String = "_User", nameKey: String = "name",
                usersKey: String = "users", rolesKey: String = "roles") {
        self.roleClass = roleClass
        self.userClass = userClass
        self.nameKey = nameKey
        self.usersKey = usersKey
        self.rolesKey = rolesKey
    }
}

/// The family's role bodies, written once for every vendor from its ``ParseFamilyRules/roles``.
public enum ParseFamilyRoles<Vendor: ParseFamilyVendor>: Sendable {
    /// The form of the vendor's roles.
    public static var form: ParseFamilyRoleForm { Vendor.rules.roles }

    /// Pointers to users by objectId.
    public static func users(_ ids: [String]) -> [Pointer] { ids.map { Pointer(className: form.userClass, objectId: $0) } }

    /// Pointers to roles by objectId.
    public static func roles(_ ids: [String]) -> [Pointer] { ids.map { Pointer(className: form.roleClass, objectId: $0) } }

    /// The body that creates a role: its name, the ACL under the vendor's key when given, and `AddRelation`s of the
    /// users and sub-roles when there are any. The name is checked by the caller (the vendors' rules differ).
    public static func createBody(name: String, users userIds: [String], roles roleIds: [String], acl: ACL?) throws(MBaaSError) -> JSONObject {
        var body: JSONObject = [form.nameKey: .string(name)]
        if !userIds.isEmpty { body[form.usersKey] = ParseFamilyFieldChange<Vendor>.addRelation(users(userIds)).json }
        if !roleIds.isEmpty { body[form.rolesKey] = ParseFamilyFieldChange<Vendor>.addRelation(roles(roleIds)).json }
        if let acl { body[Vendor.rules.aclKey] = try ParseFamilyCodec<Vendor>.encode(acl) }
        return body
    }
}

/// A client of a Parse-family vendor: given how it changes one relation field, it has the family's relation and
/// role-membership calls (written once here, not in each client).
public protocol ParseFamilyClient: Actor {
    associatedtype Vendor: ParseFamilyVendor
    /// Applies a relation change (`{"__op":"AddRelation"|"RemoveRelation","objects":[Pointer…]}`) to one field of a
    /// record and returns the record as stored.
    func changeRelation(className: String, id: String, field: String, _ change: ParseFamilyFieldChange<Vendor>) async throws -> Record
}

extension ParseFamilyClient {
    /// Adds records to a relation field (`{"__op":"AddRelation","objects":[Pointer…]}`) and returns the record.
    public func addRelation(className: String, id: String, field: String, _ pointers: [Pointer]) async throws -> Record {
        try await changeRelation(className: className, id: id, field: field, .addRelation(pointers))
    }

    /// Removes records from a relation field (`{"__op":"RemoveRelation",…}`) and returns the record.
    public func removeRelation(className: String, id: String, field: String, _ pointers: [Pointer]) async throws -> Record {
        try await changeRelation(className: className, id: id, field: field, .removeRelation(pointers))
    }

    /// Adds users (by objectId) to a role (its users relation, ``ParseFamilyRoleForm/usersKey``).
    public func addUsers(_ userIds: [String], toRole roleId: String) async throws {
        let form = ParseFamilyRoles<Vendor>.form
        _ = try await addRelation(className: form.roleClass, id: roleId, field: form.usersKey, ParseFamilyRoles<Vendor>.users(userIds))
    }

    /// Removes users (by objectId) from a role.
    public func removeUsers(_ userIds: [String], fromRole roleId: String) async throws {
        let form = ParseFamilyRoles<Vendor>.form
        _ = try await removeRelation(className: form.roleClass, id: roleId, field: form.usersKey, ParseFamilyRoles<Vendor>.users(userIds))
    }

    /// Adds sub-roles (by objectId) to a role (``ParseFamilyRoleForm/rolesKey``).
    public func addRoles(_ roleIds: [String], toRole roleId: String) async throws {
        let form = ParseFamilyRoles<Vendor>.form
        _ = try await addRelation(className: form.roleClass, id: roleId, field: form.rolesKey, ParseFamilyRoles<Vendor>.roles(roleIds))
    }
}
