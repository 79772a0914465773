import Foundation

/// `transform` of every item, in order, computed in chunks on every core (inline when there are too few to share).
/// A failure is the one of the earliest item that failed, as a front-to-back map would report it, whichever chunk
/// finished first. For this package's own modules (decoding a page, hashing records), not part of the public API.
package func parallelMap<Item: Sendable, Result: Sendable>(
    _ items: [Item], minimumChunk: Int = 128, _ transform: @escaping @Sendable (Item) throws -> Result
) async throws -> [Result] {
    let width = max(1, ProcessInfo.processInfo.activeProcessorCount)
    let chunk = max(minimumChunk, (items.count + width - 1) / width)
    guard items.count > chunk else { return try items.map(transform) }
    return try await withThrowingTaskGroup(of: (Int, Swift.Result<[Result], any Error>).self) { group in
        for (i, start) in stride(from: 0, to: items.count, by: chunk).enumerated() {
            let slice = items[start..<min(items.count, start + chunk)]
            group.addTask { (i, Swift.Result { try slice.map(transform) }) }
        }
        var parts = [Swift.Result<[Result], any Error>?](repeating: nil, count: (items.count + chunk - 1) / chunk)
        for try await (i, part) in group { parts[i] = part }
        var results: [Result] = []
        results.reserveCapacity(items.count)
        for part in parts { results += try part!.get() }   // in order: the earliest failure is thrown
        return results
    }
}
