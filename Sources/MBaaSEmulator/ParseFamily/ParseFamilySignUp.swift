import Foundation
import MBaaSCore

/// What the Parse family's dialects (NCMB, Parse) share when a user signs up: a user is the store's account
/// (credentials, sessions) and a profile record of class `_User` with the same id, holding `username`, `email`,
/// `authData` and the app's own fields. Each dialect reads its own body keys and writes its own answer and errors.
struct ParseFamilySignUp {
    /// The sign-up body's members that are not profile fields (credentials, server-set keys), the ACL's key, and the
    /// dialect's readers (its errors).
    var ignoring: Set<String>
    var aclKey: String
    var checkName: (String) throws -> Void
    var value: (JSON, String) throws -> Value
    var acl: (JSON) throws -> ACL
    /// The dialect's refusal of a taken e-mail address (`true`) or user name (`false`).
    var duplicate: (_ email: Bool) -> MBaaSError

    /// Creates the account and its profile; returns the session and the profile record.
    func signUp(in store: any ServerStore, username: String, password: String, email: String?, authData: JSON?,
                body: JSONObject) async throws -> (session: Session, profile: Record) {
        var fields: [String: Value] = [:]
        var profileACL: ACL?
        for (key, json) in body where !ignoring.contains(key) {
            if key == aclKey { profileACL = json.isNull ? nil : try acl(json); continue }
            try checkName(key)
            fields[key] = try value(json, key)
        }
        let session: Session
        do {
            session = try await store.sharing(session: nil, administrative: false)
                .signUp(username: username, password: password, email: email, fields: [:])
        } catch let e as MBaaSError where e.kind == .duplicate {
            throw duplicate(e.refusedField == MBaaSError.emailKey)
        }
        fields["username"] = .string(username)
        if let email { fields["email"] = .string(email) }
        if let authData { fields["authData"] = try value(authData, "authData") }
        // The account exists from here on: its profile is written even when the request is cancelled meanwhile (the
        // server's request deadline), in a task of its own that cancellation does not reach, so that a sign-up is
        // never half made and answered as failed.
        let user = store.sharing(session: session, administrative: false)
        let record = Record(className: "_User", id: session.userId, acl: profileACL ?? ACL.publicRead(owner: session.userId), fields: fields)
        let profile = try await Task { try await user.create(record) }.value
        return (session, profile)
    }
}
