/** Entry point: applies the saved theme and mounts the app with its router. */
import { createApp } from 'vue'
import App from './App.vue'
import { router } from './router'
import { applyTheme } from './state/ui'
import './style.css'

applyTheme()
createApp(App).use(router).mount('#app')
