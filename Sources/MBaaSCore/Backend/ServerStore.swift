public import Foundation

/// A store a server can answer many users from: a ``Backend`` whose views act as any session's user or as the
/// owner, and whose users can be administered without a session. The emulator's dialects (`mbaas serve`) are
/// written against this protocol only, so any store that conforms serves every dialect.
///
/// # What a server does with it
/// - Per request it takes a view, ``sharing(session:administrative:)``, holding the request's session token (or
///   none), and calls the ``Backend`` protocols on it: ACLs are enforced for that user (its roles and groups);
///   `administrative: true` with no session is the master key, which every ACL grants.
/// - It signs users up (``Authenticator/signUp(username:password:email:fields:)``), verifies passwords and issues
///   sessions (``Authenticator/logIn(username:password:)``), checks a token (``Authenticator/currentUser()`` on a
///   view holding it) and revokes one (``Authenticator/logOut(confirmWithServer:)`` with `true`).
/// - It administers users and their principals (``setRoles(_:forUser:)``, ``setGroups(_:forUser:)``,
///   ``user(id:)``, ``deleteUser(id:)``) and repairs ACLs (``repairACL(className:id:acl:)``,
///   ``repairFileACL(name:acl:)``) with no session.
///
/// # Contract (what must hold across views, instances and processes)
/// Several servers may run over one store: two processes over one database, or two dialect objects over two
/// openings of it. They share nothing but the store, so everything a request may depend on lives in it:
/// - A record, file, user, role or group written through any view or instance is read through every other at
///   once (read-after-write across instances, once the write returned).
/// - A session issued by one instance is accepted by every other; a session revoked (logged out, its user
///   deleted) or expired is refused by every instance on its next call, with ``MBaaSError/Kind/unauthorized``.
///   Nothing may cache a token's validity beyond one call.
/// - Tokens are unguessable (at least 128 random bits) and stored only as hashes; passwords only as salted slow
///   hashes. A wrong password and an unknown user name fail alike (`unauthorized`) and take the same time.
/// - Field operations (increment, array add/remove) and versioned updates are atomic in the store: concurrent
///   ones through different instances lose nothing; ids are allocated by the store, never by a per-process
///   counter, so two instances never hand out the same id.
/// - A write acknowledged (returned without error) is durable: a server killed afterwards loses it not.
/// - Views are cheap (nothing is opened) and share the store's connections; ``Backend/close()`` belongs to
///   whoever opened the store, not to its views.
public protocol ServerStore: Backend {
    /// Another view of the same store, holding `session` (its token is checked on the first call that needs it;
    /// an unknown, expired or revoked one is ``MBaaSError/Kind/unauthorized``) instead of this view's session.
    ///
    /// With `administrative` `true`, calls made without a session act as the store's owner (the master key:
    /// every ACL grants it); `false` makes them anonymous; `nil` keeps this view's setting. Never opens anything.
    func sharing(session: Session?, administrative: Bool?) -> Self

    /// Sets the roles of a user (ACL entries `role:NAME` then apply to it). Needs no session. An unknown user is
    /// ``MBaaSError/Kind/notFound``; an invalid name is ``MBaaSError/Kind/invalidRequest``.
    func setRoles(_ roles: [String], forUser userId: String) async throws
    /// Sets the groups of a user (ACL entries `group:NAME` then apply to it), like ``setRoles(_:forUser:)``.
    func setGroups(_ groups: [String], forUser userId: String) async throws
    /// A user by id, with its roles and groups. Needs no session; an unknown id is ``MBaaSError/Kind/notFound``.
    func user(id: String) async throws -> User
    /// Deletes a user and ends every session of it at once (on every instance); its records stay. Needs no
    /// session; an unknown id is ``MBaaSError/Kind/notFound``.
    func deleteUser(id: String) async throws
    /// Replaces a record's ACL whatever it grants (the owner's way back to a record no one can reach); bumps its
    /// version. Needs no session; a missing record is ``MBaaSError/Kind/notFound``.
    func repairACL(className: String, id: String, acl: ACL) async throws -> Record
    /// Replaces a stored file's ACL whatever it grants, like ``repairACL(className:id:acl:)``.
    func repairFileACL(name: String, acl: ACL) async throws -> FileInfo
    /// Whether a point read (``ObjectStore/get(className:id:)`` on a view, its session check included) is short and
    /// stops at nothing a task's cancellation would reach, so that a server gains nothing by giving it a task it
    /// could cancel. The emulator's request deadline then runs it in the request's own task and judges it by when it
    /// ends (`EmulatorDialect.isPointRead`). `false` unless the store says so: a store whose reads wait on a network,
    /// say, keeps a task its server can cancel.
    var pointReadsRunToTheirEnd: Bool { get }
}

extension ServerStore {
    public var pointReadsRunToTheirEnd: Bool { false }
}
