pub fn render_placeholder() {}
