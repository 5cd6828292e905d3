//! [`Pieces`]: a writer that hands its bytes on in pieces of a fixed
//! size, so that a big export reaches the browser as it is written.

use std::io::Write;

/// A writer that hands what is written on in pieces of `size` bytes
/// (the last one shorter), copying each into the browser as it fills.
pub struct Pieces<F: FnMut(&[u8])> {
    size: usize,
    buffer: Vec<u8>,
    hand_over: F,
}

impl<F: FnMut(&[u8])> Pieces<F> {
    /// Hands `hand_over` every `size` bytes written.
    pub fn new(size: usize, hand_over: F) -> Self {
        Pieces { size, buffer: Vec::with_capacity(size), hand_over }
    }

    /// Hands over what is left.
    pub fn finish(mut self) {
        if !self.buffer.is_empty() {
            (self.hand_over)(&self.buffer);
        }
    }
}

impl<F: FnMut(&[u8])> Write for Pieces<F> {
    fn write(&mut self, mut bytes: &[u8]) -> std::io::Result<usize> {
        let written = bytes.len();
        while !bytes.is_empty() {
            let (now, later) = bytes.split_at(bytes.len().min(self.size - self.buffer.len()));
            self.buffer.extend_from_slice(now);
            if self.buffer.len() == self.size {
                (self.hand_over)(&self.buffer);
                self.buffer.clear();
            }
            bytes = later;
        }
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the writes' sizes, the pieces are whole but for the last,
    /// and hold the bytes in order.
    #[test]
    fn pieces_are_full_but_the_last_and_keep_the_bytes_in_order() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
        for writes in [1, 3, 7, 10, 64, 999, 1000] {
            let mut pieces_seen: Vec<Vec<u8>> = Vec::new();
            let mut pieces = Pieces::new(10, |piece: &[u8]| pieces_seen.push(piece.to_vec()));
            for chunk in bytes.chunks(writes) {
                assert_eq!(pieces.write(chunk).unwrap(), chunk.len());
            }
            pieces.finish();
            assert_eq!(pieces_seen.concat(), bytes, "writes of {writes}");
            assert!(pieces_seen.iter().all(|p| p.len() == 10), "writes of {writes}: 1,000 bytes in pieces of 10");
        }
        let mut seen = Vec::new();
        let mut pieces = Pieces::new(10, |piece: &[u8]| seen.push(piece.len()));
        pieces.write_all(&bytes[..25]).unwrap();
        pieces.finish();
        assert_eq!(seen, [10, 10, 5]);
        let mut none = 0;
        Pieces::new(10, |_: &[u8]| none += 1).finish();
        assert_eq!(none, 0, "nothing written, no piece");
    }
}
