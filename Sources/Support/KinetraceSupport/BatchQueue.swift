#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A bounded queue of batches between one producer thread and one consumer
/// thread. Elements travel a batch at a time, so the lock is taken once a
/// batch, not once an element; a full queue blocks the producer (memory stays
/// bounded) and an empty one blocks the consumer, on condition variables.
/// "Full" is `capacity` batches, or, when batches are given weights (bytes,
/// say), a total weight that another batch would take past `maximumWeight`.
package final class BatchQueue<Element>: @unchecked Sendable {  // state is behind `mutex`
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let changed: UnsafeMutablePointer<pthread_cond_t>
    /// A ring of `capacity` slots: `count` batches from `head` on.
    private var slots: [[Element]]
    private var weights: [Int]
    private var head = 0
    private var count = 0
    private var weight = 0
    private var finished = false
    private var cancelled = false
    /// Batches held at most.
    package let capacity: Int
    /// The total weight held at most, beyond which a batch waits (one batch is always let in).
    package let maximumWeight: Int

    package init(capacity: Int, maximumWeight: Int = .max) {
        precondition(capacity > 0, "a queue holds at least one batch")
        self.capacity = capacity
        self.maximumWeight = maximumWeight
        slots = Array(repeating: [], count: capacity)
        weights = Array(repeating: 0, count: capacity)
        mutex = .allocate(capacity: 1)
        changed = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(changed, nil)
    }

    deinit {
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        changed.deallocate()
    }

    private func withLock<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    /// Producer: adds a batch, waiting while the queue is full. False once the consumer cancelled.
    /// Batches are never empty (consumers take a batch's first element), and weights are not negative.
    @discardableResult
    package func put(_ batch: [Element], weight batchWeight: Int = 0) -> Bool {
        precondition(!batch.isEmpty && batchWeight >= 0, "a batch holds something and weighs zero or more")
        return withLock {
            while (count >= capacity || (count > 0 && batchWeight > maximumWeight - weight)) && !cancelled {
                pthread_cond_wait(changed, mutex)
            }
            guard !cancelled else { return false }
            slots[(head + count) % capacity] = batch
            weights[(head + count) % capacity] = batchWeight
            weight += batchWeight
            count += 1
            pthread_cond_broadcast(changed)
            return true
        }
    }

    /// Producer: no more batches will come.
    package func finish() {
        withLock {
            finished = true
            pthread_cond_broadcast(changed)
        }
    }

    /// Consumer: the next batch, waiting while the queue is empty; nil once it is finished and drained, or cancelled.
    package func take() -> [Element]? {
        withLock {
            while count == 0 && !finished && !cancelled { pthread_cond_wait(changed, mutex) }
            guard !cancelled, count > 0 else { return nil }
            let batch = slots[head]
            slots[head] = []
            weight -= weights[head]
            head = (head + 1) % capacity
            count -= 1
            pthread_cond_broadcast(changed)
            return batch
        }
    }

    /// Consumer: stop early; a producer waiting for room is released and its `put` returns false.
    package func cancel() {
        withLock {
            cancelled = true
            pthread_cond_broadcast(changed)
        }
    }
}
